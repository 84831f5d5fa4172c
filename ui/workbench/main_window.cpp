#include "workbench/main_window.h"

#include <QComboBox>
#include <QDockWidget>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QStatusBar>
#include <QThreadPool>
#include <QTimer>
#include <QVBoxLayout>

#include "panels/event_panel.h"
#include "workbench/app_icon.h"
#include "workbench/chat_view.h"
#include "workbench/context_gauge.h"
#include "workbench/conversation_list_model.h"
#include "workbench/engine_bridge.h"
#include "workbench/model_card.h"
#include "workbench/panel_feeder.h"
#include "workbench/run_timeline.h"
#include "workbench/scheduler_view.h"
#include "workbench/scroll_dock.h"
#include "workbench/serve_controller.h"
#include "workbench/server_panel.h"
#include "workbench/settings_panel.h"

namespace fluoro::ui {

MainWindow::MainWindow(const WorkbenchOptions& opt, QWidget* parent)
    : QMainWindow(parent),
      bridge_(std::make_unique<EngineBridge>(opt.db, this)),
      serve_(std::make_unique<ServeController>(*bridge_)),
      list_model_(new ConversationListModel(this)),
      feeder_(new PanelFeeder(this)) {
    qRegisterMetaType<fluoro::Command>();
    qRegisterMetaType<fluoro::RunFinished>();
    setWindowTitle(tr("Fluoroscope"));
    setWindowIcon(app_icon());
    setObjectName("main_window");
    resize(default_size());
    if (!opt.db.empty() && bridge_->store_error().isEmpty())
        store_ = std::make_unique<StoreWorker>(opt.db);
    build_layout();
    build_docks();
    build_menus();
    connect_roofline();

    connect(bridge_.get(), &EngineBridge::events_arrived, this, &MainWindow::on_events);
    connect(bridge_.get(), &EngineBridge::error, this, &MainWindow::show_error);
    connect(bridge_.get(), &EngineBridge::model_changed, this, &MainWindow::on_model_changed);
    connect(bridge_.get(), &EngineBridge::generating_changed, this, &MainWindow::update_actions);
    if (store_) {
        connect(store_->jobs(), &StoreJobs::listed, this,
                [this](quint64 job, const ConversationList& l) {
                    if (job != list_job_) return;
                    list_model_->set_conversations(l);
                    // Mark the live conversation once the writer has it (selecting loads nothing).
                    if (viewing_live_ && bridge_->writer())
                        if (const int row =
                                list_model_->row_of(bridge_->writer()->last_conversation_id());
                            row >= 0)
                            list_view_->setCurrentIndex(list_model_->index(row));
                });
        connect(store_->jobs(), &StoreJobs::loaded, this, &MainWindow::on_loaded);
        connect(store_->jobs(), &StoreJobs::changed, this, [this] { refresh_conversations(); });
        connect(store_->jobs(), &StoreJobs::failed, this,
                [this](quint64, const QString& m) { show_error(tr("Session store: %1").arg(m)); });
        connect(list_model_, &ConversationListModel::rename_requested, this,
                [this](qint64 id, const QString& title) { store_->rename(id, title); });
        refresh_conversations();
    } else if (!opt.db.empty()) {
        show_error(tr("Session store %1 could not be opened, so nothing is recorded: %2")
                       .arg(QString::fromStdString(opt.db.string()), bridge_->store_error()));
    }
    // Sampling and max tokens as the settings panel holds them, before any run.
    bridge_->submit(settings_->change_settings());
    chat_->set_placeholder(tr("Open a model (Ctrl+O) to start chatting."));
    update_actions();
}

MainWindow::~MainWindow() {
    // Pool jobs (model cards, exports) may hold the writer or post back to us: let them finish.
    QThreadPool::globalInstance()->waitForDone();
    serve_.reset();
    store_.reset();
    bridge_.reset();
}

void MainWindow::build_layout() {
    auto* left = new QWidget(this);
    auto* l = new QVBoxLayout(left);
    l->setContentsMargins(4, 4, 4, 4);
    search_ = new QLineEdit(left);
    search_->setObjectName("search");
    search_->setPlaceholderText(tr("Search conversations (Ctrl+F)"));
    search_->setClearButtonEnabled(true);
    list_view_ = new QListView(left);
    list_view_->setObjectName("conversation_list");
    list_view_->setModel(list_model_);
    list_view_->setEditTriggers(QAbstractItemView::EditKeyPressed |
                                QAbstractItemView::SelectedClicked);
    list_view_->setUniformItemSizes(true);
    list_view_->setTextElideMode(Qt::ElideRight);
    list_view_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_view_->setMinimumHeight(140);
    auto* buttons = new QHBoxLayout();
    new_chat_ = new QPushButton(tr("New chat"), left);
    new_chat_->setObjectName("new_chat");
    auto* rename = new QPushButton(tr("Rename"), left);
    auto* remove = new QPushButton(tr("Delete"), left);
    buttons->addWidget(new_chat_);
    buttons->addWidget(rename);
    buttons->addWidget(remove);
    l->addWidget(search_);
    l->addWidget(list_view_, 1);
    l->addLayout(buttons);
    if (!store_) {
        for (QWidget* w : {static_cast<QWidget*>(search_), static_cast<QWidget*>(list_view_),
                           static_cast<QWidget*>(rename), static_cast<QWidget*>(remove)}) {
            w->setEnabled(false);
            w->setToolTip(tr("No session store"));
        }
    }

    auto* right = new QWidget(this);
    auto* r = new QVBoxLayout(right);
    r->setContentsMargins(6, 6, 6, 0);
    banner_ = new QLabel(right);
    banner_->setObjectName("error_banner");
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    banner_->setStyleSheet(
        "QLabel { background: #fde2e1; color: #8a1c13; border: 1px solid #e8a09a;"
        " border-radius: 4px; padding: 6px; }");
    banner_->hide();
    outside_bar_ = new QWidget(right);
    outside_bar_->setObjectName("outside_bar");
    auto* ob = new QHBoxLayout(outside_bar_);
    ob->setContentsMargins(0, 0, 0, 0);
    auto* outside_text = new QLabel(
        tr("Showing an API request. Your chat comes back when you send, or now:"), outside_bar_);
    outside_text->setWordWrap(true);
    outside_text->setStyleSheet("QLabel { color: palette(text); padding: 2px 4px; }");
    back_to_chat_ = new QPushButton(tr("Back to your chat"), outside_bar_);
    back_to_chat_->setObjectName("back_to_chat");
    ob->addWidget(outside_text, 1);
    ob->addWidget(back_to_chat_);
    outside_bar_->hide();
    chat_ = new ChatView(right);
    input_ = new QPlainTextEdit(right);
    input_->setObjectName("input");
    input_->setPlaceholderText(tr("Message (Ctrl+Return to send)"));
    input_->setMaximumHeight(90);
    auto* row = new QHBoxLayout();
    send_ = new QPushButton(tr("Send"), right);
    send_->setObjectName("send");
    stop_ = new QPushButton(tr("Stop"), right);
    stop_->setObjectName("stop");
    regenerate_ = new QPushButton(tr("Regenerate"), right);
    regenerate_->setObjectName("regenerate");
    row->addWidget(input_, 1);
    auto* col = new QVBoxLayout();
    col->addWidget(send_);
    col->addWidget(stop_);
    col->addWidget(regenerate_);
    row->addLayout(col);
    r->addWidget(banner_);
    r->addWidget(outside_bar_);
    r->addWidget(chat_, 1);
    r->addLayout(row);

    conversations_dock_ = new QDockWidget(tr("Conversations"), this);
    conversations_dock_->setObjectName("dock_conversations");
    conversations_dock_->setWidget(left);

    auto* bottom = new QWidget(this);
    auto* b = new QHBoxLayout(bottom);
    b->setContentsMargins(6, 0, 6, 0);
    run_picker_ = new QComboBox(bottom);
    run_picker_->setObjectName("run_picker");
    run_picker_->setToolTip(tr("Which run of the conversation the timeline and panels show"));
    run_picker_->setMinimumWidth(120);
    timeline_ = new RunTimeline(bottom);
    b->addWidget(timeline_, 1);
    b->addWidget(run_picker_);
    run_picker_->hide();  // shown for stored conversations

    auto* central = new QWidget(this);
    auto* c = new QVBoxLayout(central);
    c->setContentsMargins(0, 0, 0, 0);
    c->addWidget(right, 1);
    c->addWidget(bottom);
    setCentralWidget(central);

    model_label_ = new QLabel(tr("no model"), this);
    gauge_ = new ContextGauge(this);
    serve_label_ = new QLabel(this);
    serve_label_->setObjectName("serve_label");
    serve_label_->hide();
    server_load_label_ = new QLabel(this);
    server_load_label_->setObjectName("server_load");
    server_load_label_->setToolTip(
        tr("The attached server's /metrics, read before and after each run: server-wide figures "
           "(all its clients), not this run's internals"));
    server_load_label_->hide();
    statusBar()->addPermanentWidget(server_load_label_);
    statusBar()->addPermanentWidget(serve_label_);
    statusBar()->addPermanentWidget(model_label_);
    statusBar()->addPermanentWidget(gauge_);

    connect(send_, &QPushButton::clicked, this, &MainWindow::on_send);
    connect(stop_, &QPushButton::clicked, this, [this] { bridge_->stop(); });
    connect(regenerate_, &QPushButton::clicked, this, &MainWindow::on_regenerate);
    connect(new_chat_, &QPushButton::clicked, this, &MainWindow::on_new_chat);
    connect(back_to_chat_, &QPushButton::clicked, this, &MainWindow::on_back_to_chat);
    connect(rename, &QPushButton::clicked, this, &MainWindow::on_rename);
    connect(remove, &QPushButton::clicked, this, &MainWindow::on_delete);
    connect(search_, &QLineEdit::textChanged, this, [this] { refresh_conversations(); });
    connect(list_view_, &QListView::clicked, this, &MainWindow::on_conversation_activated);
    connect(list_view_, &QListView::activated, this, &MainWindow::on_conversation_activated);
    connect(chat_, &ChatView::token_clicked, this, &MainWindow::select_token);
    connect(chat_, &ChatView::edit_requested, this, &MainWindow::on_edit);
    connect(timeline_, &RunTimeline::scrubbed, this, [this](const std::vector<Event>& prefix) {
        reset_panels();
        feed_panels(prefix);
    });
    connect(run_picker_, &QComboBox::activated, this, &MainWindow::show_stored_run);
}

void MainWindow::build_docks() {
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowTabbedDocks |
                   QMainWindow::AllowNestedDocks);
    card_ = new ModelCard(this);
    card_dock_ = make_scroll_dock(tr("Model"), "dock_model", card_, this);
    settings_ = new SettingsPanel(this);
    settings_dock_ = make_scroll_dock(tr("Settings"), "dock_settings", settings_, this);
    server_panel_ = new ServerPanel(*serve_, this);
    server_panel_->set_sampling_source([this] { return settings_->change_settings().sampling; });
    server_panel_->set_model_settings_source([this] { return settings_->model_settings(); });
    server_dock_ = make_scroll_dock(tr("API server"), "dock_server", server_panel_, this);
    scheduler_ = new SchedulerView([this] { return serve_->schedule(); }, this);
    scheduler_dock_ = new QDockWidget(tr("Scheduler"), this);
    scheduler_dock_->setObjectName("dock_scheduler");
    scheduler_dock_->setWidget(scheduler_);

    panels_ = make_panels(this);
    for (EventPanel* p : panels_) {
        QDockWidget* dock = make_scroll_dock(p->title(), "dock_" + p->panel_id(), p, this);
        panel_docks_.push_back(dock);
        connect(p, &EventPanel::request_command, this,
                [this](const QString& tag, const fluoro::Command& c) {
                    bridge_->submit_tagged(tag, c);
                });
        connect(p, &EventPanel::token_selected, this, &MainWindow::select_token);
        feeder_->add(p, dock);
    }
    apply_default_layout();

    connect(serve_.get(), &ServeController::state_changed, this, [this] {
        serve_label_->setText(tr("API: %1").arg(serve_->url()));
        serve_label_->setVisible(serve_->running());
    });

    // A batched request is stored off the chat's path: list it once the writer committed it.
    connect(serve_.get(), &ServeController::request_served, this, [this] {
        if (serve_->schedule()) QTimer::singleShot(300, this, [this] { refresh_conversations(); });
    });
    connect(settings_, &SettingsPanel::apply_requested, this,
            [this](const ChangeSettings& c) { bridge_->submit(c); });
    connect(settings_, &SettingsPanel::reload_requested, this, [this] {
        if (bridge_->model()) open_model(QString::fromStdString(bridge_->model()->path));
    });
}

QDockWidget* MainWindow::panel_dock(const QString& id) const {
    for (size_t i = 0; i < panels_.size(); ++i)
        if (panels_[i]->panel_id() == id) return panel_docks_[i];
    return nullptr;
}

void MainWindow::show_error(const QString& message) {
    banner_->setText(message);
    banner_->setVisible(!message.isEmpty());
}

int64_t MainWindow::panel_events_fed() const {
    return feeder_->events_fed();
}

QString MainWindow::error_text() const {
    return banner_->isHidden() ? QString() : banner_->text();
}

void MainWindow::update_actions() {
    const bool model = bridge_->model().has_value();
    const bool busy = bridge_->generating();
    send_->setEnabled(model && !busy);
    send_->setText(editing_ ? tr("Resend") : tr("Send"));
    stop_->setEnabled(busy);
    bool has_reply = false;
    if (viewing_live_)
        for (const Event& e : live_chat_)
            if (const auto* f = std::get_if<RunFinished>(&e); f && f->stop != "error")
                has_reply = true;
    regenerate_->setEnabled(model && !busy && viewing_live_ && has_reply);
    outside_bar_->setVisible(viewing_live_ && outside_live_ && model);
    back_to_chat_->setEnabled(!busy);
}

}  // namespace fluoro::ui
