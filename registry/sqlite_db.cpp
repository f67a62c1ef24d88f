#include "registry/sqlite_db.h"

#include "registry/errors.h"

namespace vkllm::registry {

SqliteDb::SqliteDb(const std::filesystem::path& file) : file_(file) {
  sqlite3* raw = nullptr;
  int rc =
      sqlite3_open_v2(file.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  db_.reset(raw);
  if (rc != SQLITE_OK) {
    std::string message = raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc);
    throw RegistryError(ErrorKind::io, "cannot open catalog " + file.string() + ": " + message);
  }
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, 10000);
}

void SqliteDb::fail(std::string_view what) const {
  throw RegistryError(ErrorKind::io, "catalog " + file_.string() + ": " + std::string(what) + ": " +
                                         sqlite3_errmsg(db_.get()));
}

void SqliteDb::exec(const char* sql) {
  char* error = nullptr;
  if (sqlite3_exec(db_.get(), sql, nullptr, nullptr, &error) != SQLITE_OK) {
    std::string message = error ? error : "unknown error";
    sqlite3_free(error);
    throw RegistryError(ErrorKind::io, "catalog " + file_.string() + ": " + message + " (in " +
                                           std::string(sql).substr(0, 60) + ")");
  }
}

Statement::Statement(SqliteDb& db, const char* sql) : db_(&db), sql_(sql) {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db.handle(), sql, -1, &raw, nullptr) != SQLITE_OK)
    db.fail("cannot prepare \"" + sql_ + "\"");
  stmt_.reset(raw);
}

Statement& Statement::bind(int index, std::string_view text) {
  if (sqlite3_bind_text(stmt_.get(), index, text.data(), static_cast<int>(text.size()),
                        SQLITE_TRANSIENT) != SQLITE_OK)
    db_->fail("cannot bind parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

Statement& Statement::bind(int index, int64_t value) {
  if (sqlite3_bind_int64(stmt_.get(), index, value) != SQLITE_OK)
    db_->fail("cannot bind parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

Statement& Statement::bind_null(int index) {
  sqlite3_bind_null(stmt_.get(), index);
  return *this;
}

bool Statement::step() {
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  db_->fail("\"" + sql_ + "\" failed");
}

void Statement::run() {
  while (step()) {
  }
}

std::string Statement::text(int column) const {
  auto* p = reinterpret_cast<const char*>(sqlite3_column_blob(stmt_.get(), column));
  int n = sqlite3_column_bytes(stmt_.get(), column);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

int64_t Statement::integer(int column) const {
  return sqlite3_column_int64(stmt_.get(), column);
}

bool Statement::is_null(int column) const {
  return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL;
}

Transaction::Transaction(SqliteDb& db) : db_(db) {
  db_.exec("BEGIN IMMEDIATE");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace vkllm::registry
