// The settings panel's KV cache policy group: enabled, and Apply sends the chosen policy, budget,
// sinks and recent window as ChangeSettings.kv_policy; the choice is remembered.
#include <QComboBox>
#include <QCoreApplication>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include "workbench/settings_panel.h"

using namespace fluoro;
using namespace fluoro::ui;

class SettingsKvPolicyTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("fluoroscope-tests");
        QCoreApplication::setApplicationName("settings-kv-policy-test");
        qRegisterMetaType<fluoro::ChangeSettings>();
        QSettings().clear();
    }
    void apply_emits_the_policy();
};

void SettingsKvPolicyTest::apply_emits_the_policy() {
    SettingsPanel panel;
    auto* policy = panel.findChild<QComboBox*>("kv_policy");
    auto* budget = panel.findChild<QSpinBox*>("kv_budget");
    auto* sinks = panel.findChild<QSpinBox*>("kv_sinks");
    auto* recent = panel.findChild<QSpinBox*>("kv_recent");
    auto* apply = panel.findChild<QPushButton*>("apply_kv_policy");
    QVERIFY(policy && budget && sinks && recent && apply);
    QVERIFY(policy->isEnabled() && budget->isEnabled());
    policy->setCurrentIndex(2);  // streaming
    QVERIFY(sinks->isEnabled());
    budget->setValue(128);
    sinks->setValue(4);
    recent->setValue(96);
    QSignalSpy spy(&panel, &SettingsPanel::apply_requested);
    apply->click();
    QCOMPARE(spy.count(), 1);
    const auto c = spy.at(0).at(0).value<fluoro::ChangeSettings>();
    QVERIFY(c.kv_policy.has_value());
    QCOMPARE(c.kv_policy->kind, KvPolicyKind::Streaming);
    QCOMPARE(c.kv_policy->budget, int64_t(128));
    QCOMPARE(c.kv_policy->sinks, int64_t(4));
    QCOMPARE(c.kv_policy->recent, int64_t(96));
    // The generation group's Apply sends it too, and a new panel remembers it.
    SettingsPanel again;
    QCOMPARE(again.kv_policy().kind, KvPolicyKind::Streaming);
    QCOMPARE(again.kv_policy().budget, int64_t(128));
    policy->setCurrentIndex(1);  // window: no sinks
    QVERIFY(!sinks->isEnabled());
    QCOMPARE(panel.change_settings().kv_policy->kind, KvPolicyKind::Window);
}

QTEST_MAIN(SettingsKvPolicyTest)
#include "settings_kv_policy_test.moc"
