#include "workbench/launch.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSettings>
#include <iostream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "export/json_export.h"
#include "store/data_dir.h"
#include "workbench/main_window.h"
#include "workbench/screenshot.h"
#include "workbench/theme.h"

namespace fluoro::ui {

namespace {
constexpr const char* kDefaultModel = "SmolLM2-135M-Instruct.Q4_1.gguf";
}

QString default_model_path() {
    const QString app = QCoreApplication::applicationDirPath();
    const QStringList dirs = {app + "/../share/fluoroscope/models", app + "/../models",
                              app + "/../../models", app + "/../../../models",
                              QStringLiteral(FLUORO_SOURCE_DIR "/models")};
    for (const QString& d : dirs) {
        const QFileInfo f(d + "/" + kDefaultModel);
        if (f.isFile()) return f.canonicalFilePath();
    }
    return {};
}

ConversationPtr load_demo_run() {
    QFile f(QStringLiteral(":/demo/demo-run.json"));
    if (!f.open(QIODevice::ReadOnly))
        throw Error("the bundled demo run (:/demo/demo-run.json) is missing");
    const QByteArray bytes = f.readAll();
    auto c = app::conversation_from_json(nlohmann::json::parse(bytes.begin(), bytes.end()));
    // An imported document numbers its runs from 0; events and token picks need nonzero run ids.
    for (size_t i = 0; i < c.runs.size(); ++i) c.runs[i].id = int64_t(i + 1);
    return std::make_shared<const app::ConversationRecord>(std::move(c));
}

int run_workbench(const LaunchOptions& opt) {
    const bool dark = opt.theme.isEmpty() ? QSettings().value("dark_theme", false).toBool()
                                          : opt.theme == QLatin1String("dark");
    apply_theme(dark);

    WorkbenchOptions wo;
    try {
        wo.db =
            opt.db.isEmpty() ? app::default_db_path() : std::filesystem::path(opt.db.toStdString());
        if (wo.db.has_parent_path()) std::filesystem::create_directories(wo.db.parent_path());
    } catch (const std::exception& e) {
        std::cerr << "fluoroscope: no session store: " << e.what() << '\n';
    }
    MainWindow window(wo);
    window.set_dark(dark, false);  // --theme is for this run only

    QString model = opt.model;
    if (model.isEmpty()) model = default_model_path();
    if (model.isEmpty()) model = QSettings().value("last_model").toString();

    if (!opt.screenshot.isEmpty()) return take_screenshot(window, opt, model);

    window.restore_layout();
    window.show();
    if (opt.demo) {
        try {
            window.show_record(load_demo_run(), QObject::tr("Demo run"));
        } catch (const std::exception& e) {
            std::cerr << "fluoroscope: " << e.what() << '\n';
        }
    }
    if (opt.serve_port) window.serve_when_loaded(*opt.serve_port);
    if (!opt.attach.isEmpty())
        window.attach_remote(opt.attach, opt.attach_model);
    else if (!model.isEmpty())
        window.open_model(model);
    return QApplication::exec();
}

}  // namespace fluoro::ui
