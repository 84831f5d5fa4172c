// The settings panel's KV cache policy group (kv/kv_policy.h): policy, budget, sinks and recent
// window, sent with ChangeSettings.kv_policy (the engine applies it to the conversation at once).
#include <QComboBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <algorithm>
#include <iterator>

#include "workbench/settings_panel.h"

namespace fluoro::ui {

namespace {

constexpr KvPolicyKind kPolicies[] = {KvPolicyKind::Full,         KvPolicyKind::Window,
                                      KvPolicyKind::Streaming,    KvPolicyKind::H2O,
                                      KvPolicyKind::Scissorhands, KvPolicyKind::SnapKV};

QString policy_name(KvPolicyKind k) {
    const std::string_view n = kv_policy_name(k);
    return QString::fromLatin1(n.data(), qsizetype(n.size()));
}

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
    kv_policy_->addItems({tr("full (stop at the limit)"), tr("sliding window"),
                          tr("sinks + window (StreamingLLM)"), tr("heavy hitters (H2O)"),
                          tr("Scissorhands"), tr("SnapKV (prefill)")});
    const QString saved = st.value("kv/policy", "full").toString();
    for (int i = 0; i < int(std::size(kPolicies)); ++i)
        if (policy_name(kPolicies[i]) == saved) kv_policy_->setCurrentIndex(i);
    kv_policy_->setToolTip(tr("What the KV cache keeps when the conversation outgrows the budget"));
    kv_budget_ = kv_spin(group, 0, 1 << 20, st.value("kv/budget", 0).toInt(), tr("whole context"));
    kv_budget_->setObjectName("kv_budget");
    kv_budget_->setToolTip(tr("Most tokens the cache keeps"));
    kv_sinks_ = kv_spin(group, 0, 1024, st.value("kv/sinks", int(d.sinks)).toInt(), {});
    kv_sinks_->setObjectName("kv_sinks");
    kv_sinks_->setToolTip(tr("First tokens always kept (attention sinks)"));
    kv_recent_ = kv_spin(group, 0, 1 << 20, st.value("kv/recent", 0).toInt(), tr("budget / 4"));
    kv_recent_->setObjectName("kv_recent");
    kv_recent_->setToolTip(tr("Most recent tokens protected from eviction"));
    const auto sync = [this] {
        const KvPolicyKind k = kPolicies[std::clamp(kv_policy_->currentIndex(), 0, 5)];
        kv_sinks_->setEnabled(k == KvPolicyKind::Streaming || k == KvPolicyKind::H2O ||
                              k == KvPolicyKind::Scissorhands);
        kv_recent_->setEnabled(k != KvPolicyKind::Full && k != KvPolicyKind::Window);
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
    c.kind = kPolicies[std::clamp(kv_policy_->currentIndex(), 0, 5)];
    c.budget = kv_budget_->value();
    c.sinks = kv_sinks_->value();
    c.recent = kv_recent_->value();
    return c;
}

void SettingsPanel::save_kv_policy(QSettings& st) const {
    st.setValue("kv/policy", policy_name(kv_policy().kind));
    st.setValue("kv/budget", kv_budget_->value());
    st.setValue("kv/sinks", kv_sinks_->value());
    st.setValue("kv/recent", kv_recent_->value());
}

}  // namespace fluoro::ui
