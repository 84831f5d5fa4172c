#include "workbench/measure_form.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QToolButton>
#include <QVBoxLayout>

namespace fluoro::ui {

MeasureForm::MeasureForm(app::MeasureKind kind, const QString& model_name,
                         const app::MeasureValues& last, QWidget* parent)
    : QDialog(parent), kind_(kind) {
    setWindowTitle(QString::fromUtf8(app::measure_kind_title(kind).data(),
                                     qsizetype(app::measure_kind_title(kind).size())));
    auto* layout = new QVBoxLayout(this);
    auto* about = new QLabel(tr("Runs on <b>%1</b> in the background, with its own copy of the "
                                "model; chats go on meanwhile but share the CPU, so speeds "
                                "measured while chatting are lower. The result is stored with "
                                "your conversations.")
                                 .arg(model_name.toHtmlEscaped()),
                             this);
    about->setWordWrap(true);
    layout->addWidget(about);
    auto* form = new QFormLayout;
    for (const app::MeasureParam& p : app::measure_params(kind)) {
        auto* edit = new QLineEdit(this);
        edit->setObjectName(QString::fromStdString("measure_" + p.key));
        const auto it = last.find(p.key);
        edit->setText(QString::fromStdString(it != last.end() ? it->second : p.value));
        edit->setPlaceholderText(QString::fromStdString(p.help));
        edit->setToolTip(QString::fromStdString(p.help));
        fields_[p.key] = edit;
        QWidget* row = edit;
        if (p.file) {
            row = new QWidget(this);
            auto* h = new QHBoxLayout(row);
            h->setContentsMargins(0, 0, 0, 0);
            h->addWidget(edit, 1);
            auto* browse = new QToolButton(row);
            browse->setText(tr("…"));
            browse->setToolTip(tr("Choose a file"));
            connect(browse, &QToolButton::clicked, this, [this, edit, label = p.label] {
                const QString f =
                    QFileDialog::getOpenFileName(this, QString::fromStdString(label), edit->text());
                if (!f.isEmpty()) edit->setText(f);
            });
            h->addWidget(browse);
        }
        form->addRow(QString::fromStdString(p.label), row);
    }
    layout->addLayout(form);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Run"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    layout->addWidget(buttons);
}

app::MeasureValues MeasureForm::values() const {
    app::MeasureValues v;
    for (const auto& [key, edit] : fields_) v[key] = edit->text().trimmed().toStdString();
    return v;
}

QLineEdit* MeasureForm::field(const std::string& key) const {
    const auto it = fields_.find(key);
    return it == fields_.end() ? nullptr : it->second;
}

}  // namespace fluoro::ui
