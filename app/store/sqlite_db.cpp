#include "store/sqlite_db.h"

namespace fluoro::app {

Database::Database(const std::filesystem::path& path, int flags) : path_(path) {
    const int rc = sqlite3_open_v2(path.c_str(), &db_, flags | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
        std::string msg = "cannot open the session database ";
        msg += path.string();
        msg += ": ";
        msg += db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw StoreError(msg, rc & 0xff);
    }
    sqlite3_extended_result_codes(db_, 0);
    sqlite3_busy_timeout(db_, 5000);
}

Database::~Database() {
    sqlite3_close_v2(db_);
}

void Database::fail(int rc, std::string_view doing) const {
    std::string msg = "session database ";
    msg += path_.string();
    msg += ": ";
    msg += doing;
    msg += " failed: ";
    msg += sqlite3_errmsg(db_);
    throw StoreError(msg, rc & 0xff);
}

void Database::exec(const std::string& sql) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) fail(rc, sql.substr(0, 60));
}

Statement Database::prepare(std::string_view sql) {
    return Statement(*this, sql);
}

int64_t Database::last_insert_id() const {
    return sqlite3_last_insert_rowid(db_);
}

int64_t Database::query_int(const std::string& sql) {
    Statement st(*this, sql);
    if (!st.step()) fail(SQLITE_ERROR, sql + " (no row)");
    return st.int64(0);
}

Statement::Statement(Database& db, std::string_view sql) : db_(db) {
    const int rc = sqlite3_prepare_v2(db.handle(), sql.data(), int(sql.size()), &st_, nullptr);
    if (rc != SQLITE_OK) db.fail(rc, std::string("preparing ") + std::string(sql.substr(0, 60)));
}

Statement::Statement(Statement&& o) noexcept : db_(o.db_), st_(o.st_) {
    o.st_ = nullptr;
}

Statement::~Statement() {
    sqlite3_finalize(st_);
}

Statement& Statement::bind(int i, int64_t v) {
    if (int rc = sqlite3_bind_int64(st_, i, v); rc != SQLITE_OK) db_.fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int i, double v) {
    if (int rc = sqlite3_bind_double(st_, i, v); rc != SQLITE_OK) db_.fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int i, std::string_view text) {
    if (int rc =
            sqlite3_bind_text64(st_, i, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
        rc != SQLITE_OK)
        db_.fail(rc, "bind");
    return *this;
}

Statement& Statement::bind(int i, std::span<const uint8_t> blob) {
    static const uint8_t empty = 0;
    if (int rc = sqlite3_bind_blob64(st_, i, blob.empty() ? &empty : blob.data(), blob.size(),
                                     SQLITE_TRANSIENT);
        rc != SQLITE_OK)
        db_.fail(rc, "bind");
    return *this;
}

Statement& Statement::bind_null(int i) {
    if (int rc = sqlite3_bind_null(st_, i); rc != SQLITE_OK) db_.fail(rc, "bind");
    return *this;
}

bool Statement::step() {
    const int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    const std::string sql = sqlite3_sql(st_) ? sqlite3_sql(st_) : "";
    sqlite3_reset(st_);
    db_.fail(rc, sql.substr(0, 60));
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
}

bool Statement::is_null(int col) const {
    return sqlite3_column_type(st_, col) == SQLITE_NULL;
}

int64_t Statement::int64(int col) const {
    return sqlite3_column_int64(st_, col);
}

double Statement::real(int col) const {
    return sqlite3_column_double(st_, col);
}

std::string Statement::text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(st_, col));
    return p ? std::string(p, size_t(sqlite3_column_bytes(st_, col))) : std::string();
}

std::vector<uint8_t> Statement::blob(int col) const {
    const auto* p = static_cast<const uint8_t*>(sqlite3_column_blob(st_, col));
    const int n = sqlite3_column_bytes(st_, col);
    return p ? std::vector<uint8_t>(p, p + n) : std::vector<uint8_t>();
}

Transaction::Transaction(Database& db) : db_(db) {
    db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
    if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
    db_.exec("COMMIT");
    done_ = true;
}

}  // namespace fluoro::app
