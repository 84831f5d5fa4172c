#include "workbench/store_worker.h"

#include <QMetaObject>

#include "advisor/cache_advise.h"
#include "export/json_export.h"
#include "store/measurement_store.h"
#include "store/store.h"

namespace fluoro::ui {

StoreJobs::StoreJobs(std::filesystem::path db) : db_(std::move(db)) {}
StoreJobs::~StoreJobs() = default;

app::Store& StoreJobs::store() {
    if (!store_) store_ = std::make_unique<app::Store>(db_);
    return *store_;
}

// Runs f, turning any exception into failed(job, what()).
template <class F>
static void guarded(StoreJobs* self, quint64 job, F f) {
    try {
        f();
    } catch (const std::exception& e) {
        emit self->failed(job, QString::fromStdString(e.what()));
    }
}

void StoreJobs::list(quint64 job, const QString& search) {
    guarded(this, job,
            [&] { emit listed(job, store().search_conversations(search.toStdString())); });
}

void StoreJobs::rename(quint64 job, qint64 id, const QString& title) {
    guarded(this, job, [&] {
        store().rename_conversation(id, title.toStdString());
        emit changed(job);
    });
}

void StoreJobs::remove(quint64 job, qint64 id) {
    guarded(this, job, [&] {
        store().delete_conversation(id);
        emit changed(job);
    });
}

void StoreJobs::load(quint64 job, qint64 id) {
    guarded(this, job, [&] {
        emit loaded(job,
                    std::make_shared<const app::ConversationRecord>(store().load_conversation(id)));
    });
}

void StoreJobs::load_of_run(quint64 job, qint64 run) {
    guarded(this, job, [&] { load(job, store().conversation_of_run(run)); });
}

void StoreJobs::import_file(quint64 job, const QString& path) {
    guarded(this, job, [&] {
        const app::ConversationRecord c =
            app::conversation_from_file(std::filesystem::path(path.toStdString()));
        load(job, store().insert_conversation(c));
    });
}

void StoreJobs::advise(quint64 job, qint64 last, const QString& model) {
    guarded(this, job, [&] {
        app::CacheAdviseOptions o;
        o.db = db_;
        o.last = last;
        o.model = model.toStdString();
        emit advised(job, QString::fromStdString(app::cache_advise_report(o)));
    });
}

void StoreJobs::list_measurements(quint64 job) {
    guarded(this, job, [&] { emit measurements(job, app::list_measurements(store())); });
}

void StoreJobs::add_measurement(quint64 job, const app::MeasurementRecord& m) {
    guarded(this, job, [&] {
        app::add_measurement(store(), m);
        emit measurements(job, app::list_measurements(store()));
    });
}

void StoreJobs::delete_measurement(quint64 job, qint64 id) {
    guarded(this, job, [&] {
        app::delete_measurement(store(), id);
        emit measurements(job, app::list_measurements(store()));
    });
}

StoreWorker::StoreWorker(const std::filesystem::path& db, QObject* parent)
    : QObject(parent), jobs_(new StoreJobs(db)) {
    qRegisterMetaType<ConversationList>();
    qRegisterMetaType<ConversationPtr>();
    qRegisterMetaType<MeasurementList>();
    jobs_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, jobs_, &QObject::deleteLater);
    thread_.setObjectName("store");
    thread_.start();
}

StoreWorker::~StoreWorker() {
    thread_.quit();
    thread_.wait();
}

template <class F>
quint64 StoreWorker::post(F f) {
    const quint64 job = ++next_job_;
    QMetaObject::invokeMethod(
        jobs_, [j = jobs_, job, f] { f(j, job); }, Qt::QueuedConnection);
    return job;
}

quint64 StoreWorker::list(const QString& search) {
    return post([search](StoreJobs* j, quint64 job) { j->list(job, search); });
}

quint64 StoreWorker::rename(qint64 id, const QString& title) {
    return post([id, title](StoreJobs* j, quint64 job) { j->rename(job, id, title); });
}

quint64 StoreWorker::remove(qint64 id) {
    return post([id](StoreJobs* j, quint64 job) { j->remove(job, id); });
}

quint64 StoreWorker::load(qint64 id) {
    return post([id](StoreJobs* j, quint64 job) { j->load(job, id); });
}

quint64 StoreWorker::load_of_run(qint64 run) {
    return post([run](StoreJobs* j, quint64 job) { j->load_of_run(job, run); });
}

quint64 StoreWorker::import_file(const QString& path) {
    return post([path](StoreJobs* j, quint64 job) { j->import_file(job, path); });
}

quint64 StoreWorker::advise(qint64 last, const QString& model) {
    return post([last, model](StoreJobs* j, quint64 job) { j->advise(job, last, model); });
}

quint64 StoreWorker::list_measurements() {
    return post([](StoreJobs* j, quint64 job) { j->list_measurements(job); });
}

quint64 StoreWorker::add_measurement(const app::MeasurementRecord& m) {
    return post([m](StoreJobs* j, quint64 job) { j->add_measurement(job, m); });
}

quint64 StoreWorker::delete_measurement(qint64 id) {
    return post([id](StoreJobs* j, quint64 job) { j->delete_measurement(job, id); });
}

}  // namespace fluoro::ui
