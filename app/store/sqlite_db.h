// A thin RAII layer over the SQLite C API: a connection, prepared statements with typed binds
// and columns, and transactions. Every failure throws StoreError naming the database file and
// what SQLite said, so callers never see a raw result code.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"

namespace fluoro::app {

class StoreError : public Error {
  public:
    StoreError(const std::string& what, int code = SQLITE_ERROR) : Error(what), code_(code) {}
    int code() const { return code_; }  // the SQLite primary result code (SQLITE_FULL, ...)
    bool disk_full() const { return code_ == SQLITE_FULL; }

  private:
    int code_;
};

class Statement;

class Database {
  public:
    // flags: SQLITE_OPEN_READONLY or SQLITE_OPEN_READWRITE (| SQLITE_OPEN_CREATE).
    Database(const std::filesystem::path& path, int flags);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    const std::filesystem::path& path() const { return path_; }
    sqlite3* handle() const { return db_; }
    void exec(const std::string& sql);
    Statement prepare(std::string_view sql);
    int64_t last_insert_id() const;
    int64_t query_int(const std::string& sql);  // first column of the first row
    // Throws StoreError for result code rc, prefixed by what was being done.
    [[noreturn]] void fail(int rc, std::string_view doing) const;

  private:
    std::filesystem::path path_;
    sqlite3* db_ = nullptr;
};

class Statement {
  public:
    Statement(Database& db, std::string_view sql);
    ~Statement();
    Statement(Statement&& o) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    Statement& operator=(Statement&&) = delete;

    // Binds are 1-based like SQLite's; return *this for chaining.
    Statement& bind(int i, int64_t v);
    Statement& bind(int i, double v);
    Statement& bind(int i, std::string_view text);
    Statement& bind(int i, std::span<const uint8_t> blob);
    Statement& bind_null(int i);
    template <class T>
    Statement& bind(int i, const std::optional<T>& v) {
        return v ? bind(i, *v) : bind_null(i);
    }
    Statement& bind(int i, int v) { return bind(i, int64_t(v)); }
    Statement& bind(int i, uint64_t v) { return bind(i, int64_t(v)); }
    Statement& bind(int i, const char* text) { return bind(i, std::string_view(text)); }
    Statement& bind(int i, const std::string& text) { return bind(i, std::string_view(text)); }

    bool step();  // true: a row is available
    void run();   // step to completion, then reset for reuse
    void reset();

    bool is_null(int col) const;
    int64_t int64(int col) const;
    double real(int col) const;
    std::string text(int col) const;
    std::vector<uint8_t> blob(int col) const;

  private:
    Database& db_;
    sqlite3_stmt* st_ = nullptr;
};

class Transaction {
  public:
    explicit Transaction(Database& db);
    ~Transaction();  // rolls back unless committed
    Transaction(const Transaction&) = delete;
    Transaction& operator=(const Transaction&) = delete;
    void commit();

  private:
    Database& db_;
    bool done_ = false;
};

}  // namespace fluoro::app
