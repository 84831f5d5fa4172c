#include "workbench/model_card.h"

#include <QApplication>
#include <QPointer>
#include <QThreadPool>
#include <nlohmann/json.hpp>

#include "report/model_report.h"

namespace fluoro::ui {

ModelCard::ModelCard(QWidget* parent) : QLabel(parent) {
    setObjectName("model_card");
    setWordWrap(true);
    setTextFormat(Qt::RichText);
    setAlignment(Qt::AlignTop | Qt::AlignLeft);
    setMargin(8);
    setTextInteractionFlags(Qt::TextSelectableByMouse);
    clear_model();
}

void ModelCard::clear_model() {
    ++job_;
    setText(tr("<i>No model loaded. File → Open model… (Ctrl+O)</i>"));
}

void ModelCard::show_remote(const QString& url, const QString& model) {
    ++job_;
    setText(tr("<b>%1</b><br>served by %2<br><br><i>Attached to a remote server: the chat, "
               "tokens with their top logprobs, per-token arrival times and the server's "
               "/metrics are shown; layers, attention, the KV cache's blocks and the logit lens "
               "need a local model (File → Open model…).</i>")
                .arg(model.toHtmlEscaped(), url.toHtmlEscaped()));
}

void ModelCard::show_model(const std::filesystem::path& model) {
    const quint64 job = ++job_;
    setText(tr("<i>Reading %1…</i>").arg(QString::fromStdString(model.filename().string())));
    QPointer<ModelCard> self(this);
    QThreadPool::globalInstance()->start([self, job, model] {
        QString html;
        try {
            app::ReportOptions opt;
            opt.tensors = false;
            html = model_card_html(app::model_report_json(model, opt).dump());
        } catch (const std::exception& e) {
            html = QStringLiteral("<b>Cannot read the model</b><br>%1")
                       .arg(QString::fromStdString(e.what()).toHtmlEscaped());
        }
        QMetaObject::invokeMethod(qApp, [self, job, html] {
            if (!self || self->job_ != job) return;  // closed, or a newer model was picked
            self->setText(html);
            emit self->card_ready();
        });
    });
}

namespace {

QString human_count(double n) {
    if (n >= 1e9) return QString::number(n / 1e9, 'f', 2) + " B";
    if (n >= 1e6) return QString::number(n / 1e6, 'f', 1) + " M";
    return QString::number(n, 'f', 0);
}

QString human_bytes(double b) {
    if (b >= 1 << 30) return QString::number(b / (1 << 30), 'f', 2) + " GiB";
    if (b >= 1 << 20) return QString::number(b / (1 << 20), 'f', 1) + " MiB";
    if (b >= 1 << 10) return QString::number(b / (1 << 10), 'f', 1) + " KiB";
    return QString::number(b, 'f', 0) + " B";
}

QString row(const QString& k, const QString& v) {
    return QStringLiteral("<tr><td style=\"padding-right:10px;\"><b>%1</b></td><td>%2</td></tr>")
        .arg(k, v);
}

QString first_of(const nlohmann::json& v) {
    if (v.is_array()) return v.empty() ? QString("—") : QString::number(v[0].get<double>());
    if (v.is_number()) return QString::number(v.get<double>());
    return QStringLiteral("—");
}

}  // namespace

QString model_card_html(const std::string& report_json) {
    const auto j = nlohmann::json::parse(report_json);
    const auto& hp = j.value("hparams", nlohmann::json::object());
    QString h =
        QStringLiteral("<h3>%1</h3><table>")
            .arg(QString::fromStdString(j.value("name", std::string("(unnamed)"))).toHtmlEscaped());
    h += row("Architecture", QString::fromStdString(j.value("architecture", std::string("?"))));
    h += row("Parameters", human_count(j.value("params", 0.0)));
    h += row(
        "File type",
        QString::fromStdString(j.value("file_type", std::string("?"))) +
            QStringLiteral(" (%1 bits/weight)").arg(j.value("bits_per_weight", 0.0), 0, 'f', 2));
    h += row("File size", human_bytes(j.value("file_bytes", 0.0)));
    h += row("Trained context", first_of(hp.value("context_length", nlohmann::json())) + " tokens");
    h += row("Layers", first_of(hp.value("block_count", nlohmann::json())));
    h += row("Width", first_of(hp.value("embedding_length", nlohmann::json())));
    h += row("Heads (q / kv)", first_of(hp.value("head_count", nlohmann::json())) + " / " +
                                   first_of(hp.value("head_count_kv", nlohmann::json())));
    h += row("Vocabulary", first_of(hp.value("vocab_size", nlohmann::json())));
    if (j.contains("experts") && j["experts"].is_object()) {
        // A mixture of experts: how many each token uses, and the parameters that makes per token.
        const nlohmann::json& e = j["experts"];
        h += row("Experts", QStringLiteral("%1 of %2 per token · %3 parameters active")
                                .arg(first_of(e.value("active", nlohmann::json())),
                                     first_of(e.value("total", nlohmann::json())),
                                     human_count(e.value("active_params", 0.0))));
    }
    if (j.contains("attention") && j["attention"].is_object()) {
        // What the report computed (app/report/model_report.cpp): the variant and its head
        // ratio, the sliding-window layers, sinks, soft-capping.
        const nlohmann::json& a = j["attention"];
        QString text = QString::fromStdString(a.value("variant", std::string("?")));
        if (text == QLatin1String("GQA"))
            text += QStringLiteral(" %1:1").arg(a.value("query_heads_per_kv_head", 0.0));
        if (text == QLatin1String("MLA"))  // the latent every head reads, and what it saves
            text += QStringLiteral(" · latent %1 + %2 RoPE · %3 heads · %4 vs %5 as MHA per layer")
                        .arg(first_of(a.value("latent_rank", nlohmann::json())),
                             first_of(a.value("rope_dims", nlohmann::json())))
                        .arg(a.value("query_heads_per_kv_head", 0.0))
                        .arg(first_of(a.value("cached_elements", nlohmann::json())),
                             first_of(a.value("mha_elements", nlohmann::json())));
        if (a.contains("sliding_window") && a["sliding_window"].is_object()) {
            const nlohmann::json& w = a["sliding_window"];
            text += QStringLiteral(" · window %1 on %2 of %3 layers")
                        .arg(first_of(w.value("keys", nlohmann::json())))
                        .arg(w.value("layers", nlohmann::json::array()).size())
                        .arg(first_of(hp.value("block_count", nlohmann::json())));
        }
        if (a.value("sinks", false)) text += QStringLiteral(" · sinks");
        if (a.contains("softcap")) text += QStringLiteral(" · soft-capped");
        h += row("Attention", text);
    }
    h += row("KV bytes / token (f16)", human_bytes(j.value("kv_bytes_per_token_f16", 0.0)));
    if (j.contains("attention") && j["attention"].contains("kv_at_context")) {
        // The report's figures: the window layers keeping only their window (the default) and
        // storing every token.
        const nlohmann::json& k = j["attention"]["kv_at_context"];
        h += row(QStringLiteral("KV at %1 tokens (f16)").arg(k.value("tokens", int64_t(0))),
                 QStringLiteral("%1 (window layers keep their window; %2 storing every token)")
                     .arg(human_bytes(k.value("window_only_bytes", 0.0)),
                          human_bytes(k.value("every_token_bytes", 0.0))));
    }
    if (j.contains("chat_template") && j["chat_template"].is_object()) {
        const nlohmann::json& ct = j["chat_template"];
        const auto field = [&](const char* key) {
            return QString::fromStdString(ct.value(key, std::string())).toHtmlEscaped();
        };
        // "jinja": the file's own template renders the prompts; otherwise a built-in family, and
        // the report's note says why.
        h += row("Chat template",
                 field("name") == QLatin1String("jinja")
                     ? QStringLiteral("the model's own (Jinja; %1 markup)").arg(field("family"))
                     : field("name") + (ct.contains("note") ? " — " + field("note") : QString()));
    }
    h += QStringLiteral("</table><p><b>Quantization mix</b></p><table>");
    for (const auto& t : j.value("type_mix", nlohmann::json::array()))
        h += row(QString::fromStdString(t.value("type", std::string("?"))),
                 QStringLiteral("%1 tensors · %2 params · %3")
                     .arg(t.value("tensors", 0))
                     .arg(human_count(t.value("params", 0.0)), human_bytes(t.value("bytes", 0.0))));
    return h + QStringLiteral("</table>");
}

}  // namespace fluoro::ui
