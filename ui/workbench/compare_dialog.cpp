#include "workbench/compare_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

namespace fluoro::ui {

namespace {

QString run_label(const app::RunRecord& r) {
    return QStringLiteral("run %1 · %2 · %3 tokens · %4")
        .arg(r.id)
        .arg(QString::fromStdString(r.model_name))
        .arg(r.tokens.size())
        .arg(QString::fromStdString(r.started_at));
}

}  // namespace

CompareDialog::CompareDialog(StoreWorker* store, QWidget* parent)
    : QDialog(parent),
      store_(store),
      tokens_(new CompareTokenModel(this)),
      stats_(new CompareStatsModel(this)) {
    setWindowTitle(tr("Compare runs"));
    setObjectName(QStringLiteral("compare_runs"));
    auto* pick = new QGridLayout;
    for (int s = 0; s < 2; ++s) {
        Side& side = sides_[size_t(s)];
        side.conversation = new QComboBox(this);
        side.run = new QComboBox(this);
        side.conversation->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        side.conversation->setMinimumContentsLength(24);
        side.run->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        side.run->setMinimumContentsLength(30);
        pick->addWidget(new QLabel(s == 0 ? tr("Run A:") : tr("Run B:"), this), s, 0);
        pick->addWidget(side.conversation, s, 1);
        pick->addWidget(side.run, s, 2);
        connect(side.conversation, &QComboBox::currentIndexChanged, this,
                [this, s] { load_side(s); });
        connect(side.run, &QComboBox::currentIndexChanged, this, [this] { update_models(); });
    }
    pick->setColumnStretch(1, 2);
    pick->setColumnStretch(2, 3);

    summary_ = new QLabel(tokens_->summary(), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);

    stats_view_ = new QTableView(this);
    stats_view_->setModel(stats_);
    stats_view_->verticalHeader()->hide();
    stats_view_->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
    stats_view_->horizontalHeader()->setStretchLastSection(true);
    stats_view_->setAlternatingRowColors(true);
    stats_view_->setWordWrap(false);

    token_view_ = new QTableView(this);
    token_view_->setModel(tokens_);
    token_view_->verticalHeader()->hide();
    token_view_->horizontalHeader()->setStretchLastSection(false);
    for (QTableView* view : {stats_view_, token_view_})
        view->verticalHeader()->setDefaultSectionSize(fontMetrics().height() + 6);
    token_view_->setSelectionBehavior(QAbstractItemView::SelectRows);

    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(stats_view_);
    split->addWidget(token_view_);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(pick);
    layout->addWidget(summary_);
    layout->addWidget(split, 1);
    layout->addWidget(buttons);
    resize(900, 700);

    if (store_) {
        connect(store_->jobs(), &StoreJobs::listed, this, &CompareDialog::on_listed);
        connect(store_->jobs(), &StoreJobs::loaded, this, &CompareDialog::on_loaded);
        connect(store_->jobs(), &StoreJobs::failed, this, &CompareDialog::on_failed);
        refresh();
    } else {
        summary_->setText(tr("There is no session store, so there are no stored runs."));
    }
}

void CompareDialog::refresh() {
    if (store_) list_job_ = store_->list(QString());
}

void CompareDialog::showEvent(QShowEvent* event) {
    QDialog::showEvent(event);
    refresh();
}

void CompareDialog::preset(qint64 conversation, qint64 run_b) {
    preset_conversation_ = conversation;
    for (int s = 0; s < 2; ++s) {
        Side& side = sides_[size_t(s)];
        side.want_run = run_b;
        side.want_previous = s == 0;
        const int i = side.conversation->findData(conversation);
        if (i < 0) continue;  // selected once the list arrives
        if (side.conversation->currentIndex() == i)
            load_side(s);  // same conversation: re-read it (it may have new runs)
        else
            side.conversation->setCurrentIndex(i);
    }
}

void CompareDialog::on_listed(quint64 job, const ConversationList& list) {
    if (job != list_job_) return;
    for (int s = 0; s < 2; ++s) {
        QComboBox* combo = sides_[size_t(s)].conversation;
        const qint64 keep = preset_conversation_ >= 0    ? preset_conversation_
                            : combo->currentIndex() >= 0 ? combo->currentData().toLongLong()
                                                         : -1;
        const QSignalBlocker block(combo);
        combo->clear();
        // Newest first, like the conversation list.
        for (auto it = list.rbegin(); it != list.rend(); ++it) {
            if (it->runs == 0) continue;
            combo->addItem(
                QStringLiteral("%1 (%2 runs)").arg(QString::fromStdString(it->title)).arg(it->runs),
                qint64(it->id));
        }
        int i = combo->findData(keep);
        if (i < 0 && combo->count() > 0) i = 0;
        combo->setCurrentIndex(i);
    }
    preset_conversation_ = -1;
    if (sides_[0].conversation->count() == 0)
        summary_->setText(tr("No stored runs yet: send a message first."));
    for (int s = 0; s < 2; ++s) load_side(s);
}

void CompareDialog::load_side(int s) {
    Side& side = sides_[size_t(s)];
    if (!store_ || side.conversation->currentIndex() < 0) return;
    side.job = store_->load(side.conversation->currentData().toLongLong());
}

void CompareDialog::on_loaded(quint64 job, const ConversationPtr& c) {
    for (int s = 0; s < 2; ++s) {
        Side& side = sides_[size_t(s)];
        if (job == 0 || job != side.job || !c) continue;
        side.job = 0;
        side.loaded = c;
        fill_runs(s);
    }
}

void CompareDialog::on_failed(quint64 job, const QString& message) {
    for (Side& side : sides_)
        if (job != 0 && job == side.job) {
            side.job = 0;
            summary_->setText(tr("Could not load the conversation: %1").arg(message));
        }
}

void CompareDialog::fill_runs(int s) {
    Side& side = sides_[size_t(s)];
    const auto& runs = side.loaded->runs;
    const qint64 keep = side.run->currentIndex() >= 0 ? side.run->currentData().toLongLong() : -1;
    {
        const QSignalBlocker block(side.run);
        side.run->clear();
        for (const app::RunRecord& r : runs) side.run->addItem(run_label(r), qint64(r.id));
        int pick = -1;
        if (side.want_run >= 0 || side.want_previous) {
            // B: the wanted run (or the newest); A: the run before it.
            int b = side.want_run >= 0 ? side.run->findData(side.want_run) : -1;
            if (b < 0) b = side.run->count() - 1;
            pick = side.want_previous ? std::max(b - 1, 0) : b;
        } else {
            pick = side.run->findData(keep);
            if (pick < 0)
                pick = s == 0 ? std::max(side.run->count() - 2, 0) : side.run->count() - 1;
        }
        side.run->setCurrentIndex(pick);
        side.want_run = -1;
        side.want_previous = false;
    }
    update_models();
}

void CompareDialog::update_models() {
    std::array<std::shared_ptr<const CompareRun>, 2> picked;
    for (int s = 0; s < 2; ++s) {
        const Side& side = sides_[size_t(s)];
        const int i = side.run->currentIndex();
        if (!side.loaded || i < 0 || size_t(i) >= side.loaded->runs.size()) return;
        const app::RunRecord& r = side.loaded->runs[size_t(i)];
        const QString label =
            QStringLiteral("run %1 · %2").arg(r.id).arg(QString::fromStdString(side.loaded->title));
        picked[size_t(s)] = std::make_shared<const CompareRun>(compare_run(r, label));
    }
    stats_->set_runs(picked[0], picked[1]);
    tokens_->set_runs(picked[0], picked[1]);
    summary_->setText(tokens_->summary());
    stats_view_->resizeColumnsToContents();
    stats_view_->setColumnWidth(CompareStatsModel::RunA,
                                std::min(stats_view_->columnWidth(CompareStatsModel::RunA), 320));
    stats_view_->setColumnWidth(CompareStatsModel::RunB,
                                std::min(stats_view_->columnWidth(CompareStatsModel::RunB), 320));
    token_view_->resizeColumnsToContents();
    if (auto first = tokens_->first_divergence())
        token_view_->scrollTo(tokens_->index(*first, 0), QAbstractItemView::PositionAtCenter);
    emit compared();
}

QString CompareDialog::summary() const {
    return summary_->text();
}

}  // namespace fluoro::ui
