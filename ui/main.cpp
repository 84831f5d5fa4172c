// fluoroscope: the Qt workbench entry point. Until the main window lands it only says so.
#include <QApplication>
#include <QMessageBox>

#include "common/version.h"

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName("Fluoroscope");
    QApplication::setApplicationVersion(QString::fromUtf8(fluoro::app::version().data(),
                                                          int(fluoro::app::version().size())));
    QMessageBox::information(nullptr, "Fluoroscope",
                             "The workbench window is not built yet. Use the `fluoro` command.");
    return 0;
}
