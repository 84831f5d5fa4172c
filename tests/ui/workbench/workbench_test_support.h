// Helpers for the workbench tests: per-process scratch paths, an isolated QSettings, and the real
// default model (a missing model skips, or fails when FLUORO_REQUIRE_MODELS=1).
#pragma once

#include <unistd.h>

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QString>
#include <QTest>
#include <filesystem>

#include "test_paths.h"

namespace fluoro::ui::test {

// $TEST_TMPDIR (or the system temp dir) / "<pid>-<name>", removed first if it exists.
inline std::filesystem::path scratch(const QString& name) {
    const QString base = qEnvironmentVariableIsSet("TEST_TMPDIR")
                             ? qEnvironmentVariable("TEST_TMPDIR")
                             : QDir::tempPath();
    const std::filesystem::path p = std::filesystem::path(base.toStdString()) /
                                    (std::to_string(::getpid()) + "-" + name.toStdString());
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(p.string() + suffix);
    return p;
}

// QSettings and standard paths of a test never touch the user's.
inline void isolate_settings() {
    QStandardPaths::setTestModeEnabled(true);
    QCoreApplication::setOrganizationName("fluoroscope-tests");
    QCoreApplication::setApplicationName("workbench-test-" + QString::number(::getpid()));
}

inline QString models_dir() {
    return qEnvironmentVariableIsSet("FLUORO_MODELS_DIR")
               ? qEnvironmentVariable("FLUORO_MODELS_DIR")
               : QStringLiteral(FLUORO_MODELS_DIR);
}

inline bool models_required() {
    return qEnvironmentVariable("FLUORO_REQUIRE_MODELS") == QLatin1String("1");
}

}  // namespace fluoro::ui::test

// The default model's path into `var`, or skip (fail when FLUORO_REQUIRE_MODELS=1).
#define FLUORO_REQUIRE_DEFAULT_MODEL(var)                                                    \
    const QString var = fluoro::ui::test::models_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; \
    do {                                                                                     \
        if (!QFileInfo(var).isFile()) {                                                      \
            if (fluoro::ui::test::models_required())                                         \
                QFAIL(qPrintable("FLUORO_REQUIRE_MODELS=1 but " + var + " is missing"));     \
            QSKIP(qPrintable(var + " is missing (scripts/fetch-model.sh)"));                 \
        }                                                                                    \
    } while (0)
