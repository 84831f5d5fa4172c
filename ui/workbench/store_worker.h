// The session store off the GUI thread: a QObject living on its own QThread with its own Store
// connection. Requests are posted to it (queued); results and failures come back as queued
// signals carrying plain values, each tagged with the request's job id so a view can drop stale
// answers (e.g. an older search).
#pragma once

#include <QObject>
#include <QString>
#include <QThread>
#include <filesystem>
#include <memory>
#include <vector>

#include "store/records.h"

namespace fluoro::app {
class Store;
}

namespace fluoro::ui {

using ConversationList = std::vector<app::ConversationSummary>;
using ConversationPtr = std::shared_ptr<const app::ConversationRecord>;
using MeasurementList = std::vector<app::MeasurementRecord>;

// Lives on its thread; use StoreWorker (below) from the GUI.
class StoreJobs : public QObject {
    Q_OBJECT
  public:
    explicit StoreJobs(std::filesystem::path db);
    ~StoreJobs() override;

    void list(quint64 job, const QString& search);
    void rename(quint64 job, qint64 id, const QString& title);
    void remove(quint64 job, qint64 id);
    void load(quint64 job, qint64 id);
    // The conversation a recorded run belongs to (after the writer committed it).
    void load_of_run(quint64 job, qint64 run);
    // Reads a conversation exported as JSON (app/export/json_export.h), stores it as a new one
    // and answers with it loaded (`loaded`), or `failed` naming the file and what is wrong.
    void import_file(quint64 job, const QString& path);
    // The prompt-order advisor's text report (app/advisor/cache_advise.h) over the recorded
    // requests of the model whose path or name contains `model` (empty: the latest run's model),
    // the latest `last` of them (0: all).
    void advise(quint64 job, qint64 last, const QString& model);
    // Measurements (app/store/measurement_store.h): each answers with the whole list, newest
    // first (`measurements`), or `failed`.
    void list_measurements(quint64 job);
    void add_measurement(quint64 job, const app::MeasurementRecord& m);
    void delete_measurement(quint64 job, qint64 id);

  signals:
    void listed(quint64 job, const fluoro::ui::ConversationList& list);
    void loaded(quint64 job, const fluoro::ui::ConversationPtr& conversation);
    void changed(quint64 job);  // a rename or delete went through
    void failed(quint64 job, const QString& message);
    void advised(quint64 job, const QString& report);
    void measurements(quint64 job, const fluoro::ui::MeasurementList& list);

  private:
    app::Store& store();

    std::filesystem::path db_;
    std::unique_ptr<app::Store> store_;  // opened on first use, on the worker thread
};

class StoreWorker : public QObject {
    Q_OBJECT
  public:
    explicit StoreWorker(const std::filesystem::path& db, QObject* parent = nullptr);
    ~StoreWorker() override;  // finishes the request in progress, then stops the thread

    // Each returns the job id its answer will carry.
    quint64 list(const QString& search);
    quint64 rename(qint64 id, const QString& title);
    quint64 remove(qint64 id);
    quint64 load(qint64 id);
    quint64 load_of_run(qint64 run);
    quint64 import_file(const QString& path);
    quint64 advise(qint64 last, const QString& model);
    quint64 list_measurements();
    quint64 add_measurement(const app::MeasurementRecord& m);
    quint64 delete_measurement(qint64 id);

    StoreJobs* jobs() { return jobs_; }

  private:
    template <class F>
    quint64 post(F f);

    QThread thread_;
    StoreJobs* jobs_;
    quint64 next_job_ = 0;
};

}  // namespace fluoro::ui

Q_DECLARE_METATYPE(fluoro::ui::ConversationList)
Q_DECLARE_METATYPE(fluoro::ui::ConversationPtr)
Q_DECLARE_METATYPE(fluoro::ui::MeasurementList)
