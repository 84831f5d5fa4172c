// The settings panel's prefix cache controls: conversations kept (0: off) and "keep across
// restarts", and the window layers' storage, sent with the model settings when the model reloads
// and remembered.
#include <QCheckBox>
#include <QCoreApplication>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTest>

#include "workbench/settings_panel.h"

using namespace fluoro;
using namespace fluoro::ui;

class SettingsPrefixCacheTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("fluoroscope-tests");
        QCoreApplication::setApplicationName("settings-prefix-cache-test");
        qRegisterMetaType<fluoro::ModelSettings>();
        QSettings().clear();
    }
    void slots_and_persistence_reach_the_model_settings();
    void swa_full_reaches_the_model_settings();
};

void SettingsPrefixCacheTest::slots_and_persistence_reach_the_model_settings() {
    SettingsPanel panel;
    auto* slots_box = panel.findChild<QSpinBox*>("prefix_cache_slots");
    auto* keep = panel.findChild<QCheckBox*>("keep_prefix_cache");
    auto* reload = panel.findChild<QPushButton*>("reload_model");
    QVERIFY(slots_box && keep && reload);
    QCOMPARE(slots_box->value(), 8);  // on by default, not persisted by default
    QVERIFY(keep->isEnabled() && !keep->isChecked());
    QVERIFY(!panel.keep_prefix_cache());
    QCOMPARE(panel.model_settings().prefix_cache_slots, int64_t(8));

    keep->setChecked(true);
    QVERIFY(panel.keep_prefix_cache());
    slots_box->setValue(0);  // off: nothing to keep
    QVERIFY(!keep->isEnabled());
    QVERIFY(!panel.keep_prefix_cache());
    QCOMPARE(panel.model_settings().prefix_cache_slots, int64_t(0));

    slots_box->setValue(4);
    QVERIFY(keep->isEnabled() && panel.keep_prefix_cache());
    QSignalSpy spy(&panel, &SettingsPanel::reload_requested);
    reload->click();
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).value<fluoro::ModelSettings>().prefix_cache_slots, int64_t(4));
    // The panel never names a file: the window derives it from the model it loads.
    QVERIFY(spy.at(0).at(0).value<fluoro::ModelSettings>().prefix_cache_file.empty());

    SettingsPanel again;  // remembered
    QCOMPARE(again.model_settings().prefix_cache_slots, int64_t(4));
    QVERIFY(again.keep_prefix_cache());
}

// "Window KV: store all tokens": off by default (window-only storage), sent and remembered.
void SettingsPrefixCacheTest::swa_full_reaches_the_model_settings() {
    SettingsPanel panel;
    auto* swa = panel.findChild<QCheckBox*>("swa_full");
    QVERIFY(swa);
    QVERIFY(!swa->isChecked());
    QVERIFY(!panel.model_settings().swa_full);
    swa->setChecked(true);
    QVERIFY(panel.model_settings().swa_full);
    panel.findChild<QPushButton*>("reload_model")->click();  // saves
    SettingsPanel again;
    QVERIFY(again.model_settings().swa_full);
}

QTEST_MAIN(SettingsPrefixCacheTest)
#include "settings_prefix_cache_test.moc"
