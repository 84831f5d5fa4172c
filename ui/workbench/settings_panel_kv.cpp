// The settings panel's KV cache policy group (kv/kv_policy.h): policy, budget, sinks and recent
// window, sent with ChangeSettings.kv_policy (the engine applies it to the conversation at once).
// The policies, which of them read the sinks and the recent window, and the recent window each
// keeps by default come from the engine's list (settings/settings.h kv_policies()), so the panel
// shows what kv_decide will do.
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>

#include "workbench/setting_combo.h"
#include "workbench/settings_panel.h"

namespace fluoro::ui {

namespace {

QSpinBox* kv_spin(QWidget* parent, int lo, int hi, int value, const QString& special) {
    auto* s = new QSpinBox(parent);
    s->setRange(lo, hi);
    s->setValue(value);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    return s;
}

}  // namespace

QWidget* SettingsPanel::make_kv_policy_group() {
    QSettings st;
    const KvPolicyConfig d;
    auto* group = new QGroupBox(tr("KV cache policy (applies at once)"), this);
    auto* f = new QFormLayout(group);
    kv_policy_ = new QComboBox(group);
    kv_policy_->setObjectName("kv_policy");
    fill_setting_combo(kv_policy_, kv_policies());
    select_setting(kv_policy_,
                   stored_setting(kv_policies(), st.value("kv/policy")).value_or(d.kind));
    kv_policy_->setToolTip(tr("What the KV cache keeps when the conversation outgrows the budget"));
    kv_budget_ = kv_spin(group, 0, 1 << 20, st.value("kv/budget", int(d.budget)).toInt(),
                         tr("whole context"));
    kv_budget_->setObjectName("kv_budget");
    kv_budget_->setToolTip(tr("Most tokens the cache keeps"));
    kv_sinks_ = kv_spin(group, 0, 1024, st.value("kv/sinks", int(d.sinks)).toInt(), {});
    kv_sinks_->setObjectName("kv_sinks");
    kv_sinks_->setToolTip(tr("First tokens always kept (attention sinks)"));
    // Its special text (shown at 0) is the chosen policy's default, set by sync below.
    kv_recent_ = kv_spin(group, 0, 1 << 20, st.value("kv/recent", int(d.recent)).toInt(), {});
    kv_recent_->setObjectName("kv_recent");
    kv_recent_->setToolTip(tr("Most recent tokens protected from eviction"));
    const auto sync = [this] {
        const KvPolicyInfo& p = kv_policy_info(combo_setting(kv_policy_, KvPolicyKind::Full));
        kv_sinks_->setEnabled(p.uses_sinks);
        kv_recent_->setEnabled(p.recent_setting);
        kv_recent_->setSpecialValueText(setting_text(p.default_recent_text));
    };
    connect(kv_policy_, &QComboBox::currentIndexChanged, this, sync);
    sync();
    f->addRow(tr("KV policy"), kv_policy_);
    f->addRow(tr("KV budget"), kv_budget_);
    f->addRow(tr("Sinks"), kv_sinks_);
    f->addRow(tr("Recent"), kv_recent_);
    auto* apply = new QPushButton(tr("Apply"), group);
    apply->setObjectName("apply_kv_policy");
    f->addRow(apply);
    connect(apply, &QPushButton::clicked, this, [this] {
        save();
        emit apply_requested(change_settings());
    });
    return group;
}

KvPolicyConfig SettingsPanel::kv_policy() const {
    KvPolicyConfig c;
    c.kind = combo_setting(kv_policy_, KvPolicyKind::Full);
    c.budget = kv_budget_->value();
    c.sinks = kv_sinks_->value();
    c.recent = kv_recent_->value();
    return c;
}

void SettingsPanel::save_kv_policy(QSettings& st) const {
    st.setValue("kv/policy", setting_text(kv_policy_name(kv_policy().kind)));
    st.setValue("kv/budget", kv_budget_->value());
    st.setValue("kv/sinks", kv_sinks_->value());
    st.setValue("kv/recent", kv_recent_->value());
}

}  // namespace fluoro::ui
