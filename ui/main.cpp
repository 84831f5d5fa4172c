// fluoroscope: the Qt workbench entry point — parses the command line and runs the window
// (ui/workbench/launch.h).
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>
#include <string_view>

#include "common/version.h"
#include "workbench/app_icon.h"
#include "workbench/launch.h"

namespace {

bool has_display() {
    return qEnvironmentVariableIsSet("DISPLAY") || qEnvironmentVariableIsSet("WAYLAND_DISPLAY") ||
           qEnvironmentVariableIsSet("QT_QPA_PLATFORM");
}

// --help, --version and --screenshot need no screen: without one they run offscreen.
bool needs_no_screen(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "-h" || a == "--help" || a == "-v" || a == "--version" || a == "--screenshot" ||
            a.starts_with("--screenshot="))
            return true;
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    if (!has_display()) {
        if (!needs_no_screen(argc, argv)) {
            std::fprintf(stderr,
                         "fluoroscope: no display (DISPLAY and WAYLAND_DISPLAY are unset).\n"
                         "  Run it under a virtual display:  xvfb-run -a fluoroscope\n"
                         "  Or render a screenshot:          fluoroscope --screenshot shot.png\n"
                         "  Or chat in the terminal:         fluoro chat MODEL.gguf\n");
            return 1;
        }
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
    QApplication::setHighDpiScaleFactorRoundingPolicy(
        Qt::HighDpiScaleFactorRoundingPolicy::PassThrough);
    QApplication app(argc, argv);
    QApplication::setOrganizationName("fluoroscope");
    QApplication::setApplicationName("Fluoroscope");
    QApplication::setWindowIcon(fluoro::ui::app_icon());
    QApplication::setApplicationVersion(
        QString::fromUtf8(fluoro::app::version().data(), qsizetype(fluoro::app::version().size())));

    QCommandLineParser p;
    p.setApplicationDescription("Run LLMs locally and watch inference live.");
    p.addHelpOption();
    p.addVersionOption();
    p.addPositionalArgument(
        "model", "GGUF model to load (default: SmolLM2-135M-Instruct, else the last one)",
        "[MODEL.gguf]");
    const QCommandLineOption db(
        "db", "Session database (default: $XDG_DATA_HOME/fluoroscope/sessions.db)", "PATH");
    const QCommandLineOption shot(
        "screenshot", "Render the window after a short real generation to FILE, then exit", "FILE");
    const QCommandLineOption prompt("prompt", "The prompt --screenshot sends", "TEXT");
    const QCommandLineOption panel("panel", "With --screenshot: render only this panel's dock",
                                   "ID");
    const QCommandLineOption demo("demo", "Replay the bundled recorded run");
    const QCommandLineOption theme("theme", "light or dark (default: as last chosen)", "THEME");
    const QCommandLineOption max_tokens("max-tokens", "Tokens --screenshot generates at most", "N");
    const QCommandLineOption serve(
        "serve", "Serve the model's OpenAI-compatible API on 127.0.0.1:PORT once it is loaded",
        "PORT");
    const QCommandLineOption measure(
        "measure",
        "With --screenshot: run this measurement (ppl, eval_kv, bench_spec) from the "
        "Measure window and render that window",
        "KIND");
    const QCommandLineOption measure_param(
        "measure-param", "With --measure: a parameter, KEY=VALUE (repeatable)", "KEY=VALUE");
    const QCommandLineOption attach(
        "attach",
        "Chat with a running OpenAI-compatible server (vLLM, SGLang, llama-server, fluoro serve) "
        "instead of a local model: http://HOST:PORT[/v1]",
        "URL");
    const QCommandLineOption attach_model(
        "attach-model", "With --attach: the served model's id (default: the first it lists)", "ID");
    p.addOptions({db, shot, prompt, panel, demo, theme, max_tokens, serve, measure, measure_param,
                  attach, attach_model});
    p.process(app);

    fluoro::ui::LaunchOptions o;
    if (!p.positionalArguments().isEmpty()) o.model = p.positionalArguments().first();
    o.db = p.value(db);
    o.screenshot = p.value(shot);
    if (p.isSet(prompt)) o.prompt = p.value(prompt);
    o.panel = p.value(panel);
    o.demo = p.isSet(demo);
    o.theme = p.value(theme);
    if (p.isSet(max_tokens)) o.max_tokens = std::max(1, p.value(max_tokens).toInt());
    o.measure = p.value(measure);
    o.attach = p.value(attach);
    o.attach_model = p.value(attach_model);
    for (const QString& kv : p.values(measure_param)) {
        const qsizetype eq = kv.indexOf('=');
        if (eq <= 0) {
            std::fprintf(stderr, "fluoroscope: --measure-param needs KEY=VALUE, not '%s'\n",
                         qPrintable(kv));
            return 2;
        }
        o.measure_params[kv.left(eq).toStdString()] = kv.mid(eq + 1).toStdString();
    }
    if (p.isSet(serve)) {
        bool ok = false;
        const int port = p.value(serve).toInt(&ok);
        if (!ok || port < 0 || port > 65535) {
            std::fprintf(stderr, "fluoroscope: --serve needs a port (0-65535), not '%s'\n",
                         qPrintable(p.value(serve)));
            return 2;
        }
        o.serve_port = port;
    }
    return fluoro::ui::run_workbench(o);
}
