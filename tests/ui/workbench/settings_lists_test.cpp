// The settings panel shows the engine's lists (settings/settings.h): every item of each list in
// the engine's order, with its label and description, the engine's default chosen on a fresh
// start, and each policy's or drafter's knobs enabled as the engine's traits say (the KV policy's
// sinks and recent window, with the recent window the engine keeps by default).
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTest>

#include "workbench/settings_panel.h"

using namespace fluoro;
using namespace fluoro::ui;

class SettingsListsTest : public QObject {
    Q_OBJECT
  private slots:
    void init() {
        QCoreApplication::setOrganizationName("fluoroscope-tests");
        QCoreApplication::setApplicationName("settings-lists-test");
        QSettings().clear();
    }
    void every_list_in_the_engines_order_with_its_defaults();
    void kv_policy_knobs_follow_the_engines_traits();
    void drafter_knobs_follow_the_engines_traits();
    void choices_are_stored_by_name_and_old_positions_still_read();
};

namespace {

QString text(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

template <typename Info, typename Kind>
void expect_list(const SettingsPanel& panel, const char* name, std::span<const Info> list,
                 Kind engine_default) {
    auto* box = panel.findChild<QComboBox*>(name);
    QVERIFY2(box, name);
    QCOMPARE(box->count(), int(list.size()));
    for (int i = 0; i < box->count(); ++i) {
        const Info& item = list[size_t(i)];
        QCOMPARE(box->itemData(i).toInt(), int(item.kind));
        QCOMPARE(box->itemText(i), text(item.label));
        QCOMPARE(box->itemData(i, Qt::ToolTipRole).toString(), text(item.description));
    }
    QCOMPARE(box->currentData().toInt(), int(engine_default));
}

}  // namespace

void SettingsListsTest::every_list_in_the_engines_order_with_its_defaults() {
    SettingsPanel panel;
    expect_list(panel, "kv_policy", kv_policies(), KvPolicyConfig{}.kind);
    expect_list(panel, "kv_type", kv_types(), ModelSettings{}.kv_type.k);
    // The values' type: "same as keys" first (the default), then the engine's list.
    auto* kv_type_v = panel.findChild<QComboBox*>("kv_type_v");
    QVERIFY(kv_type_v);
    QCOMPARE(kv_type_v->count(), int(kv_types().size()) + 1);
    QCOMPARE(kv_type_v->currentData().toInt(), -1);
    for (size_t i = 0; i < kv_types().size(); ++i)
        QCOMPARE(kv_type_v->itemData(int(i) + 1).toInt(), int(kv_types()[i].kind));
    expect_list(panel, "attention", attention_impls(), ModelSettings{}.attention);
    expect_list(panel, "backend", backend_kinds(), ModelSettings{}.backend);
    expect_list(panel, "mla", mla_paths(), ModelSettings{}.mla);
    expect_list(panel, "spec_mode", spec_modes(), SpeculativeSettings{}.mode);
    // What a fresh panel sends is the engine's defaults.
    const ModelSettings m = panel.model_settings();
    QCOMPARE(m.kv_type, ModelSettings{}.kv_type);
    QCOMPARE(m.attention, ModelSettings{}.attention);
    QCOMPARE(m.backend, ModelSettings{}.backend);
    QCOMPARE(m.mla, ModelSettings{}.mla);
    const KvPolicyConfig kv = panel.kv_policy();
    QCOMPARE(kv.kind, KvPolicyConfig{}.kind);
    QCOMPARE(kv.budget, KvPolicyConfig{}.budget);
    QCOMPARE(kv.sinks, KvPolicyConfig{}.sinks);
    QCOMPARE(kv.recent, KvPolicyConfig{}.recent);
    QCOMPARE(panel.change_settings().speculative->mode, SpeculativeSettings{}.mode);
}

void SettingsListsTest::kv_policy_knobs_follow_the_engines_traits() {
    SettingsPanel panel;
    auto* policy = panel.findChild<QComboBox*>("kv_policy");
    auto* sinks = panel.findChild<QSpinBox*>("kv_sinks");
    auto* recent = panel.findChild<QSpinBox*>("kv_recent");
    QVERIFY(policy && sinks && recent);
    QCOMPARE(recent->value(), 0);  // the policy's default, shown in words
    for (const KvPolicyInfo& p : kv_policies()) {
        policy->setCurrentIndex(policy->findData(int(p.kind)));
        QCOMPARE(panel.kv_policy().kind, p.kind);
        QVERIFY2(sinks->isEnabled() == p.uses_sinks, p.name.data());
        QVERIFY2(recent->isEnabled() == p.recent_setting, p.name.data());
        QCOMPARE(recent->specialValueText(), text(p.default_recent_text));
        QCOMPARE(recent->text(), text(p.default_recent_text));
    }
    // The drift this test was written for: SnapKV keeps sinks, and H2O's default is half the
    // budget, not a quarter.
    QVERIFY(kv_policy_info(KvPolicyKind::SnapKV).uses_sinks);
    QCOMPARE(text(kv_policy_info(KvPolicyKind::H2O).default_recent_text), QString("budget / 2"));
}

void SettingsListsTest::drafter_knobs_follow_the_engines_traits() {
    SettingsPanel panel;
    auto* mode = panel.findChild<QComboBox*>("spec_mode");
    auto* draft_model = panel.findChild<QLineEdit*>("draft_model");
    auto* max_draft = panel.findChild<QSpinBox*>("max_draft");
    auto* exit_layer = panel.findChild<QSpinBox*>("exit_layer");
    auto* p_min = panel.findChild<QDoubleSpinBox*>("draft_p_min");
    QVERIFY(mode && draft_model && max_draft && exit_layer && p_min);
    for (const SpecModeInfo& m : spec_modes()) {
        mode->setCurrentIndex(mode->findData(int(m.kind)));
        QCOMPARE(panel.change_settings().speculative->mode, m.kind);
        QVERIFY2(draft_model->isEnabled() == m.needs_draft_model, m.name.data());
        QVERIFY2(max_draft->isEnabled() == m.drafts, m.name.data());
        QVERIFY2(exit_layer->isEnabled() == m.uses_exit_layer, m.name.data());
        QVERIFY2(p_min->isEnabled() == m.uses_confidence, m.name.data());
    }
}

void SettingsListsTest::choices_are_stored_by_name_and_old_positions_still_read() {
    {
        QSettings st;  // as an older version stored them: positions in the list
        st.setValue("model/attention", 0);
        st.setValue("spec/mode", 1);
    }
    SettingsPanel panel;
    QCOMPARE(panel.model_settings().attention, AttentionImpl::Standard);
    QCOMPARE(panel.change_settings().speculative->mode, SpecMode::PromptLookup);
    auto* kv_type = panel.findChild<QComboBox*>("kv_type");
    QVERIFY(kv_type);
    kv_type->setCurrentIndex(kv_type->findData(int(KvType::Q8_0)));
    auto* apply = panel.findChild<QPushButton*>("apply_settings");
    QVERIFY(apply);
    apply->click();  // saves
    QSettings st;
    QCOMPARE(st.value("model/attention").toString(), QString("standard"));
    QCOMPARE(st.value("spec/mode").toString(), QString("prompt_lookup"));
    QCOMPARE(st.value("model/kv_type").toString(), QString("q8_0"));
    QCOMPARE(st.value("model/backend").toString(), QString("cpu"));
    QCOMPARE(st.value("model/kv_type_v").toString(), QString());  // same as keys
    SettingsPanel again;
    QCOMPARE(again.model_settings().kv_type, KvTypes(KvType::Q8_0, KvType::Q8_0));
    QCOMPARE(again.model_settings().attention, AttentionImpl::Standard);
    // Values in a type of their own, stored by name and read back.
    auto* kv_type_v = again.findChild<QComboBox*>("kv_type_v");
    QVERIFY(kv_type_v);
    kv_type_v->setCurrentIndex(kv_type_v->findData(int(KvType::Q4_0)));
    QCOMPARE(again.model_settings().kv_type, KvTypes(KvType::Q8_0, KvType::Q4_0));
    auto* apply_again = again.findChild<QPushButton*>("apply_settings");
    QVERIFY(apply_again);
    apply_again->click();
    QCOMPARE(QSettings().value("model/kv_type_v").toString(), QString("q4_0"));
    SettingsPanel third;
    QCOMPARE(third.model_settings().kv_type, KvTypes(KvType::Q8_0, KvType::Q4_0));
}

QTEST_MAIN(SettingsListsTest)
#include "settings_lists_test.moc"
