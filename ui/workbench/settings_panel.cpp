#include "workbench/settings_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include "session/backend_factory.h"
#include "workbench/setting_combo.h"

namespace fluoro::ui {

namespace {

QDoubleSpinBox* dspin(QWidget* p, double lo, double hi, double step, double v) {
    auto* s = new QDoubleSpinBox(p);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    s->setDecimals(2);
    s->setValue(v);
    return s;
}

QSpinBox* ispin(QWidget* p, int lo, int hi, int v) {
    auto* s = new QSpinBox(p);
    s->setRange(lo, hi);
    s->setValue(v);
    return s;
}

}  // namespace

SettingsPanel::SettingsPanel(QWidget* parent) : QWidget(parent) {
    setObjectName("settings_panel");
    QSettings st;
    const SamplingParams d;
    const ModelSettings md;  // the engine's defaults for a model load
    auto* lay = new QVBoxLayout(this);

    auto* sampling = new QGroupBox(tr("Generation"), this);
    auto* f = new QFormLayout(sampling);
    temperature_ =
        dspin(sampling, 0, 5, 0.05, st.value("sampling/temperature", d.temperature).toDouble());
    top_k_ = ispin(sampling, 0, 1000, st.value("sampling/top_k", d.top_k).toInt());
    top_p_ = dspin(sampling, 0, 1, 0.01, st.value("sampling/top_p", d.top_p).toDouble());
    min_p_ = dspin(sampling, 0, 1, 0.01, st.value("sampling/min_p", d.min_p).toDouble());
    repeat_penalty_ = dspin(sampling, 0.5, 3, 0.05,
                            st.value("sampling/repeat_penalty", d.repeat_penalty).toDouble());
    seed_ = ispin(sampling, 0, 1 << 30, st.value("sampling/seed", 0).toInt());
    max_tokens_ = ispin(sampling, 1, 32768, st.value("sampling/max_tokens", 512).toInt());
    system_prompt_ = new QPlainTextEdit(st.value("sampling/system_prompt").toString(), sampling);
    system_prompt_->setPlaceholderText(tr("System prompt (optional)"));
    system_prompt_->setMaximumHeight(70);
    attention_ = new QComboBox(sampling);
    attention_->setObjectName("attention");
    fill_setting_combo(attention_, attention_impls());
    select_setting(
        attention_,
        stored_setting(attention_impls(), st.value("model/attention")).value_or(md.attention));
    attention_->setToolTip(
        tr("Attention kernel (CPU): standard, or flash (tiled, online softmax)"));
    f->addRow(tr("Temperature"), temperature_);
    f->addRow(tr("Top-k"), top_k_);
    f->addRow(tr("Top-p"), top_p_);
    f->addRow(tr("Min-p"), min_p_);
    f->addRow(tr("Repeat penalty"), repeat_penalty_);
    f->addRow(tr("Seed"), seed_);
    f->addRow(tr("Max tokens"), max_tokens_);
    f->addRow(tr("System prompt"), system_prompt_);
    f->addRow(tr("Attention"), attention_);
    spec_mode_ = new QComboBox(sampling);
    spec_mode_->setObjectName("spec_mode");
    fill_setting_combo(spec_mode_, spec_modes());
    select_setting(
        spec_mode_,
        stored_setting(spec_modes(), st.value("spec/mode")).value_or(SpeculativeSettings{}.mode));
    spec_mode_->setToolTip(
        tr("Speculative decoding: a drafter proposes tokens, the model checks "
           "them in one pass (same output at temperature 0)"));
    draft_model_ = new QLineEdit(st.value("spec/draft_model").toString(), sampling);
    draft_model_->setObjectName("draft_model");
    draft_model_->setPlaceholderText(tr("draft GGUF (same vocabulary)"));
    max_draft_ = ispin(sampling, 1, kMaxDraftTokens,
                       st.value("spec/max_draft", SpeculativeSettings{}.max_draft).toInt());
    max_draft_->setObjectName("max_draft");
    exit_layer_ = ispin(sampling, 0, 256, st.value("spec/exit_layer", 0).toInt());
    exit_layer_->setObjectName("exit_layer");
    exit_layer_->setSpecialValueText(tr("half the layers"));
    draft_p_min_ =
        dspin(sampling, 0, 0.99, 0.05,
              st.value("spec/draft_p_min", SpeculativeSettings{}.draft_p_min).toDouble());
    draft_p_min_->setObjectName("draft_p_min");
    draft_p_min_->setSpecialValueText(tr("off"));
    draft_p_min_->setToolTip(
        tr("Draft model / self-speculative: stop a draft where the draft's most likely token has "
           "less than this probability"));
    const auto sync_spec = [this] {  // the knobs the chosen drafter reads
        const SpecModeInfo& mode = spec_mode_info(combo_setting(spec_mode_, SpecMode::Off));
        draft_model_->setEnabled(mode.needs_draft_model);
        max_draft_->setEnabled(mode.drafts);
        exit_layer_->setEnabled(mode.uses_exit_layer);
        draft_p_min_->setEnabled(mode.uses_confidence);
    };
    connect(spec_mode_, &QComboBox::currentIndexChanged, this, sync_spec);
    sync_spec();
    f->addRow(tr("Speculative"), spec_mode_);
    f->addRow(tr("Draft model"), draft_model_);
    f->addRow(tr("Draft tokens"), max_draft_);
    f->addRow(tr("Exit layer"), exit_layer_);
    f->addRow(tr("Draft confidence"), draft_p_min_);
    auto* apply = new QPushButton(tr("Apply"), sampling);
    apply->setObjectName("apply_settings");
    f->addRow(apply);
    lay->addWidget(sampling);

    auto* model = new QGroupBox(tr("Model (reloads it)"), this);
    auto* m = new QFormLayout(model);
    threads_ = ispin(model, 0, 256, st.value("model/threads", 0).toInt());
    threads_->setSpecialValueText(tr("physical cores"));
    ctx_ = ispin(model, 128, 1 << 20, st.value("model/ctx", 4096).toInt());
    ctx_->setSingleStep(512);
    kv_type_ = new QComboBox(model);
    kv_type_->setObjectName("kv_type");
    fill_setting_combo(kv_type_, kv_types());
    select_setting(kv_type_,
                   stored_setting(kv_types(), st.value("model/kv_type")).value_or(md.kv_type.k));
    kv_type_->setToolTip(
        tr("Element type of the cached keys (and of the values, unless the V "
           "type below says otherwise)"));
    // Values may be stored in another type than keys (llama.cpp's --cache-type-v): keys feed q·k,
    // so they are the half quantization hurts more. The first item keeps them together.
    kv_type_v_ = new QComboBox(model);
    kv_type_v_->setObjectName("kv_type_v");
    kv_type_v_->addItem(tr("same as keys"), -1);
    fill_setting_combo(kv_type_v_, kv_types());
    if (const auto v = stored_setting(kv_types(), st.value("model/kv_type_v")))
        select_setting(kv_type_v_, *v);
    backend_ = new QComboBox(model);
    backend_->setObjectName("backend");
    fill_setting_combo(backend_, backend_kinds());
    const int cuda = backend_->findData(int(BackendKind::Cuda));
    if (!app::cuda_built() && cuda >= 0) {  // listed, not offered: say why
        auto* items = qobject_cast<QStandardItemModel*>(backend_->model());
        if (items != nullptr) items->item(cuda)->setEnabled(false);
    }
    backend_->setToolTip(tr("CUDA: %1").arg(QString::fromStdString(app::cuda_status())));
    select_setting(
        backend_,
        app::cuda_built()
            ? stored_setting(backend_kinds(), st.value("model/backend")).value_or(md.backend)
            : BackendKind::Cpu);
    m->addRow(tr("Backend"), backend_);
    m->addRow(tr("Threads"), threads_);
    m->addRow(tr("Context"), ctx_);
    m->addRow(tr("KV type"), kv_type_);
    m->addRow(tr("V type"), kv_type_v_);
    prefix_slots_ = ispin(model, 0, 64, st.value("model/prefix_cache_slots", 8).toInt());
    prefix_slots_->setObjectName("prefix_cache_slots");
    prefix_slots_->setSpecialValueText(tr("off"));
    prefix_slots_->setSuffix(tr(" conversations"));
    prefix_slots_->setToolTip(
        tr("Prompt prefixes kept for reuse across conversations (a radix tree over token ids; "
           "KV blocks shared, not copied). The KV pool doubles to hold them."));
    keep_prefix_cache_ = new QCheckBox(tr("keep across restarts"), model);
    keep_prefix_cache_->setObjectName("keep_prefix_cache");
    keep_prefix_cache_->setChecked(st.value("model/keep_prefix_cache", false).toBool());
    keep_prefix_cache_->setToolTip(
        tr("Save the prefix cache to a file per model (under ~/.cache/fluoroscope) and restore "
           "it when the same model file and settings load again"));
    const auto sync_prefix = [this] { keep_prefix_cache_->setEnabled(prefix_slots_->value() > 0); };
    connect(prefix_slots_, &QSpinBox::valueChanged, this, sync_prefix);
    sync_prefix();
    m->addRow(tr("Prefix cache"), prefix_slots_);
    m->addRow(QString(), keep_prefix_cache_);
    swa_full_ = new QCheckBox(tr("store all tokens"), model);
    swa_full_->setObjectName("swa_full");
    swa_full_->setChecked(st.value("model/swa_full", false).toBool());
    swa_full_->setToolTip(
        tr("Sliding-window layers (Gemma 2/3, gpt-oss) keep only their window in the KV cache by "
           "default; checked, they store every token as llama.cpp's --swa-full (more memory, the "
           "same answers). A prefix cache kept across restarts or an evicting KV policy needs "
           "every row anyway."));
    m->addRow(tr("Window KV"), swa_full_);
    mla_ = new QComboBox(model);
    mla_->setObjectName("mla");
    fill_setting_combo(mla_, mla_paths());
    select_setting(
        mla_, stored_setting(mla_paths(), st.value("model/mla")).value_or(ModelSettings{}.mla));
    mla_->setToolTip(
        tr("Multi-head latent attention models (deepseek2): absorbed attends in the latent space "
           "and caches RoPE dims + latent per token; naive caches every head's key and value. "
           "Other models ignore it. Applies on reload."));
    m->addRow(tr("MLA path"), mla_);
    auto* reload = new QPushButton(tr("Reload model"), model);
    reload->setObjectName("reload_model");
    m->addRow(reload);
    lay->addWidget(model);

    lay->addWidget(make_kv_policy_group());

    lay->addStretch(1);
    // Narrow enough for a laptop's left dock column: a row whose label and field do not fit side
    // by side puts the field under its label, and a choice list is as wide as 12 characters (the
    // longest entry shows when it is open, and in its tooltip), not as its longest entry.
    for (QFormLayout* form : findChildren<QFormLayout*>())
        form->setRowWrapPolicy(QFormLayout::WrapLongRows);
    for (QComboBox* box : findChildren<QComboBox*>()) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(12);
    }

    connect(apply, &QPushButton::clicked, this, [this] {
        save();
        emit apply_requested(change_settings());
    });
    connect(reload, &QPushButton::clicked, this, [this] {
        save();
        emit reload_requested(model_settings());
    });
}

ChangeSettings SettingsPanel::change_settings() const {
    SamplingParams p;
    p.temperature = float(temperature_->value());
    p.top_k = top_k_->value();
    p.top_p = float(top_p_->value());
    p.min_p = float(min_p_->value());
    p.repeat_penalty = float(repeat_penalty_->value());
    p.seed = uint64_t(seed_->value());
    p.n_probs = 5;
    ChangeSettings c;
    c.sampling = p;
    c.max_tokens = max_tokens_->value();
    c.system_prompt = system_prompt_->toPlainText().toStdString();
    c.attention = combo_setting(attention_, kDefaultAttentionImpl);
    SpeculativeSettings sp;
    sp.mode = combo_setting(spec_mode_, SpecMode::Off);
    sp.draft_model = draft_model_->text().toStdString();
    sp.max_draft = max_draft_->value();
    sp.exit_layer = exit_layer_->value();
    sp.draft_p_min = float(draft_p_min_->value());
    c.speculative = sp;
    c.kv_policy = kv_policy();
    return c;
}

ModelSettings SettingsPanel::model_settings() const {
    ModelSettings s;
    s.backend = combo_setting(backend_, BackendKind::Cpu);
    s.threads = threads_->value();
    s.ctx = ctx_->value();
    const KvType k = combo_setting(kv_type_, ModelSettings{}.kv_type.k);
    const int v = kv_type_v_->currentData().toInt();
    s.kv_type = KvTypes{k, v < 0 ? k : KvType(v)};
    s.attention = combo_setting(attention_, kDefaultAttentionImpl);
    s.prefix_cache_slots = prefix_slots_->value();
    s.swa_full = swa_full_->isChecked();
    s.mla = combo_setting(mla_, MlaPath::Absorbed);
    return s;
}

bool SettingsPanel::keep_prefix_cache() const {
    return prefix_slots_->value() > 0 && keep_prefix_cache_->isChecked();
}

void SettingsPanel::save() const {
    QSettings st;
    st.setValue("sampling/temperature", temperature_->value());
    st.setValue("sampling/top_k", top_k_->value());
    st.setValue("sampling/top_p", top_p_->value());
    st.setValue("sampling/min_p", min_p_->value());
    st.setValue("sampling/repeat_penalty", repeat_penalty_->value());
    st.setValue("sampling/seed", seed_->value());
    st.setValue("sampling/max_tokens", max_tokens_->value());
    st.setValue("sampling/system_prompt", system_prompt_->toPlainText());
    // Choices are stored by name (older versions stored some by position: stored_setting reads
    // both).
    st.setValue("model/backend", setting_name(backend_, BackendKind::Cpu, backend_kind_name));
    st.setValue("model/threads", threads_->value());
    st.setValue("model/ctx", ctx_->value());
    st.setValue("model/kv_type", setting_name(kv_type_, KvType::F16, kv_type_name));
    st.setValue("model/kv_type_v", kv_type_v_->currentData().toInt() < 0
                                       ? QString()
                                       : setting_name(kv_type_v_, KvType::F16, kv_type_name));
    st.setValue("model/attention",
                setting_name(attention_, kDefaultAttentionImpl, attention_impl_name));
    st.setValue("model/prefix_cache_slots", prefix_slots_->value());
    st.setValue("model/keep_prefix_cache", keep_prefix_cache_->isChecked());
    st.setValue("model/swa_full", swa_full_->isChecked());
    st.setValue("model/mla", setting_name(mla_, MlaPath::Absorbed, mla_path_name));
    st.setValue("spec/mode", setting_name(spec_mode_, SpecMode::Off, spec_mode_name));
    st.setValue("spec/draft_model", draft_model_->text());
    st.setValue("spec/max_draft", max_draft_->value());
    st.setValue("spec/exit_layer", exit_layer_->value());
    st.setValue("spec/draft_p_min", draft_p_min_->value());
    save_kv_policy(st);
}

}  // namespace fluoro::ui
