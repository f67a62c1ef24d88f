// RAII over SQLite: a connection, prepared statements that reset themselves, and an
// IMMEDIATE transaction that rolls back unless committed. Errors throw RegistryError(io)
// naming the database file and the statement.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vkllm::registry {

class SqliteDb;

class Statement {
 public:
  Statement(SqliteDb& db, const char* sql);
  Statement(Statement&&) noexcept = default;
  ~Statement() = default;

  Statement& bind(int index, std::string_view text);
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, uint64_t value) { return bind(index, static_cast<int64_t>(value)); }
  Statement& bind_null(int index);

  // Advances to the next row; false when done.
  bool step();
  // Runs a statement that returns no rows.
  void run();

  std::string text(int column) const;
  int64_t integer(int column) const;
  bool is_null(int column) const;

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  SqliteDb* db_;
  std::string sql_;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
};

class SqliteDb {
 public:
  explicit SqliteDb(const std::filesystem::path& file);
  SqliteDb(const SqliteDb&) = delete;
  SqliteDb& operator=(const SqliteDb&) = delete;

  void exec(const char* sql);
  sqlite3* handle() const { return db_.get(); }
  const std::filesystem::path& file() const { return file_; }
  int64_t changes() const { return sqlite3_changes64(db_.get()); }
  [[noreturn]] void fail(std::string_view what) const;

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  std::filesystem::path file_;
  std::unique_ptr<sqlite3, Closer> db_;
};

class Transaction {
 public:
  explicit Transaction(SqliteDb& db);
  ~Transaction();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit();

 private:
  SqliteDb& db_;
  bool done_ = false;
};

}  // namespace vkllm::registry
