// The settings panel's speculative decoding controls: which knobs each drafter enables, the draft
// confidence (draft_p_min) reaching ChangeSettings, and every value remembered.
#include <QComboBox>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTest>

#include "workbench/settings_panel.h"

using namespace fluoro;
using namespace fluoro::ui;

class SettingsSpeculativeTest : public QObject {
    Q_OBJECT
  private slots:
    void initTestCase() {
        QCoreApplication::setOrganizationName("fluoroscope-tests");
        QCoreApplication::setApplicationName("settings-speculative-test");
        QSettings().clear();
    }
    void drafter_knobs_reach_change_settings_and_are_remembered();
};

void SettingsSpeculativeTest::drafter_knobs_reach_change_settings_and_are_remembered() {
    SettingsPanel panel;
    auto* mode = panel.findChild<QComboBox*>("spec_mode");
    auto* p_min = panel.findChild<QDoubleSpinBox*>("draft_p_min");
    QVERIFY(mode && p_min);
    QCOMPARE(panel.change_settings().speculative->mode, SpecMode::Off);
    QCOMPARE(p_min->value(), double(SpeculativeSettings{}.draft_p_min));  // the engine's default
    QVERIFY(!p_min->isEnabled());
    mode->setCurrentIndex(1);  // prompt lookup: no draft model, no confidence
    QVERIFY(!p_min->isEnabled());
    mode->setCurrentIndex(2);  // draft model
    QVERIFY(p_min->isEnabled());
    mode->setCurrentIndex(3);  // self-speculative
    QVERIFY(p_min->isEnabled());
    p_min->setValue(0.5);
    const SpeculativeSettings sp = *panel.change_settings().speculative;
    QCOMPARE(sp.mode, SpecMode::SelfSpeculative);
    QCOMPARE(sp.draft_p_min, 0.5f);
    sp.validate();  // what the panel sends is valid

    auto* apply = panel.findChild<QPushButton*>("apply_settings");
    QVERIFY(apply);
    apply->click();       // saves
    SettingsPanel again;  // remembered
    QCOMPARE(again.change_settings().speculative->mode, SpecMode::SelfSpeculative);
    QCOMPARE(again.change_settings().speculative->draft_p_min, 0.5f);
}

QTEST_MAIN(SettingsSpeculativeTest)
#include "settings_speculative_test.moc"
