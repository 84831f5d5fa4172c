// MainWindow: attaching the chat to a remote OpenAI-compatible server (File → Attach to server,
// --attach) and the server's load in the status bar.
#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>

#include "remote/remote_engine.h"
#include "workbench/chat_view.h"
#include "workbench/engine_bridge.h"
#include "workbench/main_window.h"
#include "workbench/model_card.h"
#include "workbench/settings_panel.h"

namespace fluoro::ui {

void MainWindow::attach_remote(const QString& url, const QString& model, const QString& key_env,
                               bool metrics, const QString& ca_file) {
    if (bridge_->generating()) bridge_->stop();
    show_error({});
    app::RemoteAttach a;
    a.url = url.trimmed().toStdString();
    a.model = model.trimmed().toStdString();
    a.api_key_env = key_env.trimmed().toStdString();
    a.scrape_metrics = metrics;
    a.ca_file = ca_file.trimmed().toStdString();
    try {
        bridge_->attach(a);
    } catch (const std::exception& e) {
        show_error(QString::fromStdString(e.what()));
        return;
    }
    pending_model_.clear();
    run_load_before_.reset();
    server_load_label_->clear();
    model_label_->setText(tr("attaching to %1…").arg(url));
    card_->show_remote(url, model.isEmpty() ? tr("(the first model it lists)") : model);
    // What a request carries (sampling, max tokens, the system prompt) goes with every turn.
    bridge_->submit(settings_->change_settings());
    QSettings st;
    st.setValue("attach/url", url);
    st.setValue("attach/model", model);
    st.setValue("attach/key_env", key_env);
    st.setValue("attach/metrics", metrics);
    st.setValue("attach/ca_file", ca_file);
    update_actions();
}

void MainWindow::on_attach_remote() {
    QSettings st;
    QDialog d(this);
    d.setWindowTitle(tr("Attach to server"));
    auto* form = new QFormLayout(&d);
    auto* url = new QLineEdit(st.value("attach/url", "http://127.0.0.1:8000/v1").toString(), &d);
    url->setObjectName("attach_url");
    auto* model = new QLineEdit(st.value("attach/model").toString(), &d);
    model->setPlaceholderText(tr("the first model the server lists"));
    auto* key_env = new QLineEdit(st.value("attach/key_env", "OPENAI_API_KEY").toString(), &d);
    key_env->setToolTip(
        tr("The environment variable holding the server's API key, sent as a Bearer token. The "
           "key itself is never stored."));
    auto* ca_file = new QLineEdit(st.value("attach/ca_file").toString(), &d);
    ca_file->setPlaceholderText(tr("https: the system's CA certificates"));
    ca_file->setToolTip(
        tr("For an https server with a private CA or a self-signed certificate: the PEM file "
           "of certificates to trust instead of the system's."));
    auto* metrics = new QCheckBox(tr("Read the server's /metrics around each run"), &d);
    metrics->setChecked(st.value("attach/metrics", true).toBool());
    form->addRow(tr("Server URL"), url);
    form->addRow(tr("Model id"), model);
    form->addRow(tr("API key variable"), key_env);
    form->addRow(tr("CA file"), ca_file);
    form->addRow(metrics);
    auto* note = new QLabel(tr("vLLM, SGLang, llama-server, Ollama or another fluoro serve: any "
                               "OpenAI-compatible chat completions endpoint, http or https."),
                            &d);
    note->setWordWrap(true);
    form->addRow(note);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &d);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Attach"));
    connect(buttons, &QDialogButtonBox::accepted, &d, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
    form->addRow(buttons);
    if (d.exec() == QDialog::Accepted)
        attach_remote(url->text(), model->text(), key_env->text(), metrics->isChecked(),
                      ca_file->text());
}

void MainWindow::show_server_load(const ServerLoadEvent& load) {
    // The run's first reading is the "before" of its second: the label then says what this run
    // moved as well.
    const bool same_run = run_load_before_ && run_load_before_->run == load.run;
    const std::string line =
        app::server_load_summary(load, same_run ? &*run_load_before_ : nullptr);
    if (!same_run) run_load_before_ = load;
    server_load_label_->setText(QString::fromStdString(line));
    server_load_label_->setVisible(bridge_->attached());
}

}  // namespace fluoro::ui
