// The settings panel. Sampling, max tokens, the system prompt and speculative decoding apply
// through ChangeSettings (from the next run), the attention kernel and the KV cache policy too (at
// once); backend, threads, context, KV type and the prefix cache through LoadModel (the model is
// reloaded). Values are remembered in QSettings.
#pragma once

#include <QWidget>

#include "runtime/engine_commands.h"

class QDoubleSpinBox;
class QSpinBox;
class QComboBox;
class QPlainTextEdit;
class QLineEdit;
class QCheckBox;
class QSettings;

namespace fluoro::ui {

class SettingsPanel : public QWidget {
    Q_OBJECT
  public:
    explicit SettingsPanel(QWidget* parent = nullptr);

    ChangeSettings change_settings() const;
    ModelSettings model_settings() const;
    // Whether the prefix cache persists across restarts (its file depends on the model: the
    // window fills ModelSettings::prefix_cache_file when it loads one).
    bool keep_prefix_cache() const;
    // The KV cache policy as set (settings_panel_kv.cpp).
    KvPolicyConfig kv_policy() const;

  signals:
    void apply_requested(const fluoro::ChangeSettings& c);
    void reload_requested(const fluoro::ModelSettings& s);

  private:
    void save() const;
    QWidget* make_kv_policy_group();
    void save_kv_policy(QSettings& st) const;

    QDoubleSpinBox *temperature_, *top_p_, *min_p_, *repeat_penalty_;
    QSpinBox *top_k_, *seed_, *max_tokens_, *threads_, *ctx_;
    QComboBox *backend_, *kv_type_, *kv_type_v_, *attention_, *spec_mode_, *mla_;
    QLineEdit* draft_model_;
    QSpinBox *max_draft_, *exit_layer_, *prefix_slots_;
    QDoubleSpinBox* draft_p_min_;
    QCheckBox* keep_prefix_cache_;
    QCheckBox* swa_full_;  // ModelSettings::swa_full
    QPlainTextEdit* system_prompt_;
    QComboBox* kv_policy_ = nullptr;
    QSpinBox *kv_budget_ = nullptr, *kv_sinks_ = nullptr, *kv_recent_ = nullptr;
};

}  // namespace fluoro::ui

Q_DECLARE_METATYPE(fluoro::ChangeSettings)
Q_DECLARE_METATYPE(fluoro::ModelSettings)
