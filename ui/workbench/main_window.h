// The workbench window: conversation list (left), chat with input and stats (centre), the
// telemetry panels, model card and settings as docks, a run timeline and context gauge at the
// bottom. Split by feature: main_window.cpp (layout), main_window_chat.cpp (sending, live events),
// main_window_store.cpp (stored conversations), main_window_model.cpp (models, settings),
// main_window_menus.cpp (menus, shortcuts, export, theme).
#pragma once

#include <QByteArray>
#include <QMainWindow>
#include <QPointer>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <unordered_set>
#include <vector>

#include "runtime/engine_commands.h"
#include "session/conversation_mirror.h"
#include "store/records.h"
#include "telemetry/events.h"
#include "workbench/store_worker.h"

class QDockWidget;
class QLabel;
class QLineEdit;
class QListView;
class QPlainTextEdit;
class QPushButton;
class QComboBox;
class QMenu;

namespace fluoro::ui {

class ChatView;
class AdvisorDialog;
class CompareDialog;
class MeasurementsDialog;
class ContextGauge;
class ConversationListModel;
class EngineBridge;
class EventPanel;
class ModelCard;
class PanelFeeder;
class RunTimeline;
class SchedulerView;
class ServeController;
class ServerPanel;
class SettingsPanel;

struct WorkbenchOptions {
    std::filesystem::path db;  // session store; empty: nothing recorded, no conversation list
};

class MainWindow : public QMainWindow {
    Q_OBJECT
  public:
    explicit MainWindow(const WorkbenchOptions& opt, QWidget* parent = nullptr);
    ~MainWindow() override;

    // Loads a model through the engine (reported by model_changed / an error banner).
    void open_model(const QString& path);
    // File → Attach to server: the chat goes to the OpenAI-compatible server at `url` (model:
    // the served model's id, empty: the first it lists; the API key from the environment
    // variable key_env; metrics: read its /metrics around each run). Reported like a model
    // load (the status line, or an error banner); opening a model file detaches.
    // ca_file: for https, PEM CA certificates to trust instead of the system's.
    void attach_remote(const QString& url, const QString& model = {},
                       const QString& key_env = QStringLiteral("OPENAI_API_KEY"),
                       bool metrics = true, const QString& ca_file = {});
    // The server's load as last scraped (hidden while not attached).
    QLabel* server_load_label() const { return server_load_label_; }
    void send_message(const QString& text);
    // Shows a conversation that is not in the store (the bundled demo run).
    void show_record(ConversationPtr conversation, const QString& label);
    // remember: keep the choice for the next start (View → Dark theme does).
    void set_dark(bool dark, bool remember = true);
    // The window geometry and dock layout saved when the window last closed (QSettings), when
    // saved by this layout version with the same docks (else the default stays); the geometry is
    // clamped to the screen it lands on (main_window_layout.cpp).
    void restore_layout();
    // View → Reset layout: every dock back where a fresh window puts it, sized for this window.
    void reset_layout();
    // Exports without asking for a file ("trace", "csv", "json", "markdown"); reported by
    // exported(). The Export menu asks for the path, then calls these.
    void export_to(const QString& format, const QString& path);
    // Stores the conversation exported as JSON at `path` as a new one and shows it (File →
    // Import conversation); a file that is not one is reported in the error banner.
    void import_conversation(const QString& path);
    bool export_panel_image_to(EventPanel* panel, QDockWidget* dock, const QString& path);
    void report_export(const QString& path, bool ok, const QString& why);

    EngineBridge& bridge() { return *bridge_; }
    ChatView* chat() { return chat_; }
    RunTimeline* timeline() { return timeline_; }
    ConversationListModel* conversations() { return list_model_; }
    StoreWorker* store_worker() { return store_.get(); }
    const std::vector<EventPanel*>& panels() const { return panels_; }
    QDockWidget* panel_dock(const QString& id) const;
    QString error_text() const;
    // Events handed to the panels so far (each batch counted once per panel).
    int64_t panel_events_fed() const;
    PanelFeeder* panel_feeder() { return feeder_; }
    // Chat → Compare runs: opens (or raises) the compare window, preset to the shown run and the
    // one before it in its conversation.
    CompareDialog* open_compare();
    // Chat → Prompt cache advisor, on the loaded model's recorded requests (refreshes it).
    AdvisorDialog* open_advisor();
    // Measure → …: the measurements window, on the loaded model (opens or raises it).
    MeasurementsDialog* open_measurements();
    // The OpenAI-compatible server over this window's engine (Server menu, API server dock).
    ServeController& serve() { return *serve_; }
    ServerPanel* server_panel() { return server_panel_; }
    // The API server's continuous batching (serving with parallel slots).
    SchedulerView* scheduler() { return scheduler_; }
    // Starts the server on `port` once a model is loaded (now, when one is): --serve.
    void serve_when_loaded(int port);

  signals:
    void run_finished(const fluoro::RunFinished& f);
    void conversation_shown();  // a stored conversation (or the demo) is on screen
    void exported(const QString& path, bool ok);

  protected:
    void closeEvent(QCloseEvent* e) override;

  private:
    // main_window.cpp
    void build_layout();
    void build_docks();

    // main_window_layout.cpp
    // Places every dock (conversations over model/settings/server tabs on the left, the panels as
    // tabs on the right) and, after the first layout pass, sizes the columns for the window.
    void apply_default_layout();
    void apply_default_sizes();
    // The window's first size: 1600×1000 or the screen's usable area, whichever is smaller.
    QSize default_size() const;
    // Shrinks and moves the window so that its frame lies on its screen's available area.
    void clamp_to_screen();
    void show_error(const QString& message);
    void update_actions();

    // main_window_chat.cpp
    void on_events(const std::vector<Event>& batch);
    void on_send();
    void on_regenerate();
    void on_edit(int message_index, const QString& text);
    void on_new_chat();
    // Submits a command of the window's own chat (its conversations are told apart from API
    // requests' by the submission number); returns that number. A NewConversation makes ours
    // the live one (outside_live_, own_new_pending_).
    uint64_t submit_own(Command c);
    // Sends `text` to the window's own conversation: refused by the engine when an API request's
    // took its place first, and then sent again after take_own_back (on_events).
    void send_own(const QString& text);
    // Hands the window's conversation back to the engine after an API request's (a new one when
    // it has none).
    void take_own_back();
    void on_back_to_chat();
    void show_live();
    void feed_panels(const std::vector<Event>& batch);
    void reset_panels();
    void select_token(quint64 run, qint64 index);

    // main_window_store.cpp
    void refresh_conversations();
    void on_conversation_activated(const QModelIndex& index);
    void on_rename();
    void on_delete();
    void on_loaded(quint64 job, const ConversationPtr& c);
    void show_stored_run(int run_index);

    // main_window_model.cpp
    void on_open_model();
    void on_attach_remote();  // the dialog
    void on_model_changed();
    void show_server_load(const ServerLoadEvent& load);
    void remember_model(const QString& path);
    void rebuild_recent_menu();

    // main_window_roofline.cpp
    void connect_roofline();
    void show_stored_limits();
    void measure_limits();

    // main_window_menus.cpp
    void build_menus();
    void export_run(const QString& format);
    void export_panel_image(EventPanel* panel, QDockWidget* dock);
    void with_conversation(std::function<void(const ConversationPtr&)> f);
    std::optional<app::RunRecord> current_run() const;

    std::unique_ptr<EngineBridge> bridge_;
    std::unique_ptr<StoreWorker> store_;      // after bridge_: destroyed first
    std::unique_ptr<ServeController> serve_;  // after bridge_: stops before the engine goes
    ServerPanel* server_panel_ = nullptr;
    QLabel* serve_label_ = nullptr;
    std::optional<int> serve_on_load_;  // --serve's port, until a model is loaded
    ConversationListModel* list_model_;
    PanelFeeder* feeder_;
    QListView* list_view_ = nullptr;
    QDockWidget* conversations_dock_ = nullptr;
    QLineEdit* search_ = nullptr;
    ChatView* chat_ = nullptr;
    QPlainTextEdit* input_ = nullptr;
    QPushButton *send_ = nullptr, *stop_ = nullptr, *regenerate_ = nullptr, *new_chat_ = nullptr;
    QLabel* banner_ = nullptr;
    QWidget* outside_bar_ = nullptr;  // "an API request is on screen", with the way back
    QPushButton* back_to_chat_ = nullptr;
    QLabel* model_label_ = nullptr;
    QLabel* server_load_label_ = nullptr;
    std::optional<ServerLoadEvent> run_load_before_;  // the live run's first server reading
    ContextGauge* gauge_ = nullptr;
    RunTimeline* timeline_ = nullptr;
    QComboBox* run_picker_ = nullptr;
    ModelCard* card_ = nullptr;
    SettingsPanel* settings_ = nullptr;
    QMenu* recent_menu_ = nullptr;
    QAction* dark_action_ = nullptr;
    std::vector<EventPanel*> panels_;
    std::vector<QDockWidget*> panel_docks_;
    QDockWidget *card_dock_ = nullptr, *settings_dock_ = nullptr, *server_dock_ = nullptr;
    SchedulerView* scheduler_ = nullptr;
    QDockWidget* scheduler_dock_ = nullptr;
    QByteArray default_state_;  // saveState() of apply_default_layout(), for Reset layout

    QString pending_model_;
    std::optional<int> editing_;    // engine message index being edited
    bool viewing_live_ = true;      // the chat mirrors the engine's conversation
    std::vector<Event> live_chat_;  // chat-relevant events since the last ConversationStarted
    std::vector<Event> live_run_;   // every event of the newest live run
    std::unordered_set<uint64_t> own_submissions_;
    app::ConversationMirror own_chat_;  // the window's own conversation, as the engine holds it
    bool outside_live_ = false;         // an API request's conversation is the engine's now
    bool own_new_pending_ = false;      // a NewConversation of ours not started yet (id unknown)
    struct OwnSend {
        uint64_t submission = 0, conversation = 0;  // SendMessage::conversation
        QString text;
    };
    std::optional<OwnSend> last_send_;  // the newest message sent, until the next
    ConversationPtr shown_;             // the stored conversation on screen (when not live)
    std::vector<std::vector<Event>> shown_runs_;
    quint64 load_job_ = 0, list_job_ = 0, import_job_ = 0;
    std::map<quint64, std::function<void(const ConversationPtr&)>> pending_exports_;  // by job
    bool saw_model_ = false;
    QPointer<CompareDialog> compare_;
    QPointer<AdvisorDialog> advisor_;
    QPointer<MeasurementsDialog> measurements_;
};

}  // namespace fluoro::ui

Q_DECLARE_METATYPE(fluoro::RunFinished)
