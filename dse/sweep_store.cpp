#include "dse/sweep_store.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>
#include <type_traits>

#include <fmt/format.h>
#include <sqlite3.h>

#include "core/enum_table.h"

namespace coda::dse {

namespace {
constexpr std::array<std::pair<std::string_view, Verdict>, 4> kVerdicts{
    {{"unchecked", Verdict::Unchecked},
     {"unknown", Verdict::Unknown},
     {"pass", Verdict::Pass},
     {"fail", Verdict::Fail}}};
}  // namespace

std::string_view to_string(Verdict verdict) { return enum_name(kVerdicts, verdict); }
std::optional<Verdict> parse_verdict(std::string_view text) { return enum_value(kVerdicts, text); }

namespace {

constexpr std::string_view kTables = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS axes(
  axis INTEGER NOT NULL,
  value INTEGER NOT NULL,
  path TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY(axis, value));
CREATE TABLE IF NOT EXISTS points(
  idx INTEGER PRIMARY KEY,
  arch_hash TEXT NOT NULL,
  finished_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS point_values(
  point INTEGER NOT NULL REFERENCES points(idx),
  axis INTEGER NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY(point, axis));
)sql";

// The row's closed sets, held as their names in the store and the codec (an unset memory status
// as empty text, as stores have always held it for rows that did not run).
template <class T>
constexpr bool kNamed = std::is_same_v<T, RowStatus> || std::is_same_v<T, Verdict> ||
                        std::is_same_v<T, std::optional<results::FitStatus>>;

std::string field_text(RowStatus v) { return std::string(to_string(v)); }
std::string field_text(Verdict v) { return std::string(to_string(v)); }
std::string field_text(const std::optional<results::FitStatus>& v) {
  return v ? std::string(results::to_string(*v)) : std::string();
}

// Whether `text` names a value of the field's set (then stored in it).
bool parse_field(const std::string& text, RowStatus& out) {
  const auto v = parse_row_status(text);
  if (v) out = *v;
  return v.has_value();
}
bool parse_field(const std::string& text, Verdict& out) {
  const auto v = parse_verdict(text);
  if (v) out = *v;
  return v.has_value();
}
bool parse_field(const std::string& text, std::optional<results::FitStatus>& out) {
  out = text.empty() ? std::nullopt : results::parse_fit_status(text);
  return text.empty() || out.has_value();
}

template <class T>
constexpr std::string_view sql_type() {
  if constexpr (std::is_same_v<T, double>) return "REAL";
  else if constexpr (std::is_same_v<T, std::string> || kNamed<T>) return "TEXT";
  else return "INTEGER";  // std::uint64_t, bool
}

// The tables: meta, points, and results with a column per visit_result_fields field.
std::string schema_sql() {
  std::string sql(kTables);
  sql += "CREATE TABLE IF NOT EXISTS results(\n  point INTEGER NOT NULL REFERENCES points(idx),\n";
  const SweepRow empty;
  visit_result_fields(empty, [&](std::string_view name, const auto& field) {
    sql += fmt::format("  {} {} NOT NULL,\n", name,
                       sql_type<std::remove_cvref_t<decltype(field)>>());
  });
  return sql + "  PRIMARY KEY(point, workload));\n";
}

std::size_t result_field_count() {
  std::size_t n = 0;
  const SweepRow empty;
  visit_result_fields(empty, [&](std::string_view, const auto&) { ++n; });
  return n;
}

// Bumped when the tables change; a store of another schema is not resumed. 2: results.run_json
// (the whole RunResult) became run_summary (dse/sweep.h run_summary). 3: points.axis_values (a
// JSON object of texts) became point_values (integers) and axes (the texts).
constexpr std::string_view kStoreSchema = "3";

std::string error_of(sqlite3* db) { return db != nullptr ? sqlite3_errmsg(db) : "out of memory"; }

bool exec(sqlite3* db, std::string_view sql, std::string& why) {
  char* message = nullptr;
  const std::string text(sql);
  if (sqlite3_exec(db, text.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return true;
  why = message != nullptr ? message : error_of(db);
  sqlite3_free(message);
  return false;
}

// A prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, std::string_view sql) {
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) !=
        SQLITE_OK)
      stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  explicit operator bool() const { return stmt_ != nullptr; }
  sqlite3_stmt* get() const { return stmt_; }

  void bind(int i, const std::string& text) {
    sqlite3_bind_text(stmt_, i, text.c_str(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int i, double v) { sqlite3_bind_double(stmt_, i, v); }
  void bind(int i, std::uint64_t v) { sqlite3_bind_int64(stmt_, i, static_cast<sqlite3_int64>(v)); }

  std::string text(int i) const {
    const auto* p = sqlite3_column_text(stmt_, i);
    return p != nullptr ? std::string(reinterpret_cast<const char*>(p),
                                      static_cast<std::size_t>(sqlite3_column_bytes(stmt_, i)))
                        : std::string();
  }
  double real(int i) const { return sqlite3_column_double(stmt_, i); }
  std::uint64_t integer(int i) const {
    return static_cast<std::uint64_t>(sqlite3_column_int64(stmt_, i));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

std::optional<std::string> meta_value(sqlite3* db, std::string_view key) {
  Statement stmt(db, "SELECT value FROM meta WHERE key = ?1");
  if (!stmt) return std::nullopt;
  stmt.bind(1, std::string(key));
  if (sqlite3_step(stmt.get()) != SQLITE_ROW) return std::nullopt;
  return stmt.text(0);
}

// What a damaged store is told: the damage SQLite found, and how to recover.
std::string damaged_store(const std::filesystem::path& file, const std::string& found) {
  return fmt::format("'{}' is damaged (SQLite: {}): its points cannot be trusted; run the sweep "
                     "again into a new --out folder (`sqlite3 {} .recover` copies out what is "
                     "intact)",
                     file.string(), found, file.string());
}

sqlite3* open_db(const std::filesystem::path& file, int flags, std::string& why) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(file.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    why = fmt::format("cannot open '{}': {}", file.string(), error_of(db));
    sqlite3_close(db);
    return nullptr;
  }
  sqlite3_busy_timeout(db, 5000);
  // See the header for why FULL.
  if (!exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;", why)) {
    // A file that is not a database, or one cut short, fails here, before any quick_check.
    const int code = sqlite3_extended_errcode(db) & 0xff;
    why = code == SQLITE_CORRUPT || code == SQLITE_NOTADB ? damaged_store(file, why)
                                                          : fmt::format("'{}': {}", file.string(), why);
    sqlite3_close(db);
    return nullptr;
  }
  return db;
}

std::string now_utc() {
  return fmt::format("{}", std::chrono::system_clock::now().time_since_epoch().count());
}

}  // namespace

std::unique_ptr<SweepStore> SweepStore::create(const std::filesystem::path& file,
                                               std::uint64_t spec_hash,
                                               const std::string& spec_name,
                                               std::span<const StoreAxis> axes, std::string& why) {
  std::error_code ec;  // an unusable path fails below, at sqlite3_open, with its reason
  if (std::filesystem::exists(file, ec)) {
    why = fmt::format("'{}' exists: a previous sweep's store", file.string());
    return nullptr;
  }
  sqlite3* db = open_db(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, why);
  if (db == nullptr) return nullptr;
  std::unique_ptr<SweepStore> store(new SweepStore(db));
  if (!exec(db, "BEGIN", why) || !exec(db, schema_sql(), why)) return nullptr;
  Statement insert(db, "INSERT INTO meta(key, value) VALUES (?1, ?2)");
  if (!insert) {
    why = error_of(db);
    return nullptr;
  }
  for (const auto& [key, value] : {std::pair<std::string, std::string>{"schema", kStoreSchema},
                                   {"spec_hash", fmt::format("{:016x}", spec_hash)},
                                   {"spec_name", spec_name}}) {
    sqlite3_reset(insert.get());
    insert.bind(1, key);
    insert.bind(2, value);
    if (sqlite3_step(insert.get()) != SQLITE_DONE) {
      why = error_of(db);
      return nullptr;
    }
  }
  Statement axis(db, "INSERT INTO axes(axis, value, path, text) VALUES (?1, ?2, ?3, ?4)");
  if (!axis) {
    why = error_of(db);
    return nullptr;
  }
  for (std::size_t a = 0; a < axes.size(); ++a)
    for (std::size_t v = 0; v < axes[a].values.size(); ++v) {
      sqlite3_reset(axis.get());
      axis.bind(1, std::uint64_t{a});
      axis.bind(2, std::uint64_t{v});
      axis.bind(3, axes[a].path);
      axis.bind(4, axes[a].values[v]);
      if (sqlite3_step(axis.get()) != SQLITE_DONE) {
        why = error_of(db);
        return nullptr;
      }
    }
  if (!exec(db, "COMMIT", why)) return nullptr;
  return store;
}

std::unique_ptr<SweepStore> SweepStore::open(const std::filesystem::path& file,
                                             std::uint64_t spec_hash, std::string& why) {
  std::error_code ec;  // an unusable path (a name over 255 bytes) holds no store either
  if (!std::filesystem::exists(file, ec)) {
    why = fmt::format("'{}' does not exist: there is no sweep to resume", file.string());
    return nullptr;
  }
  sqlite3* db = open_db(file, SQLITE_OPEN_READWRITE, why);
  if (db == nullptr) return nullptr;
  std::unique_ptr<SweepStore> store(new SweepStore(db));
  if (const auto damaged = store->damage()) {
    why = damaged_store(file, "quick_check: " + *damaged);
    return nullptr;
  }
  const auto schema = meta_value(db, "schema");
  const auto hash = meta_value(db, "spec_hash");
  if (!schema || !hash) {
    why = fmt::format("'{}' is not a coda sweep store", file.string());
    return nullptr;
  }
  if (*schema != kStoreSchema) {
    why = fmt::format("'{}' was written by another version of coda (store schema {}, this coda "
                      "writes {}): run the sweep again into a new --out folder",
                      file.string(), *schema, kStoreSchema);
    return nullptr;
  }
  const std::string expected = fmt::format("{:016x}", spec_hash);
  if (*hash != expected) {
    why = fmt::format("'{}' holds a sweep of another spec (hash {}; this spec, with its arch and "
                      "workload files, hashes to {}): resuming would mix their results",
                      file.string(), *hash, expected);
    return nullptr;
  }
  return store;
}

std::optional<std::string> SweepStore::damage() const {
  Statement stmt(db_, "PRAGMA quick_check(3)");
  if (!stmt) return error_of(db_);
  std::string found;
  int rc = SQLITE_ROW;
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
    // One message per row, a row holding several lines; SQLite's "*** in database main ***"
    // header says nothing here.
    std::istringstream lines(stmt.text(0));
    for (std::string line; std::getline(lines, line);) {
      if (line == "ok" || line.rfind("*** in database", 0) == 0) continue;
      found += (found.empty() ? "" : "; ") + line;
    }
  }
  if (rc != SQLITE_DONE) found += (found.empty() ? "" : "; ") + error_of(db_);
  if (found.empty()) return std::nullopt;
  return found;
}

std::optional<std::uint64_t> SweepStore::row_count() const {
  Statement stmt(db_, "SELECT COUNT(*) FROM points p JOIN results r ON r.point = p.idx");
  if (!stmt || sqlite3_step(stmt.get()) != SQLITE_ROW) return std::nullopt;
  return stmt.integer(0);
}

SweepStore::~SweepStore() { sqlite3_close(db_); }

std::set<std::uint64_t> SweepStore::done_points() const {
  std::set<std::uint64_t> done;
  Statement stmt(db_, "SELECT idx FROM points");
  while (stmt && sqlite3_step(stmt.get()) == SQLITE_ROW) done.insert(stmt.integer(0));
  return done;
}

std::vector<bool> SweepStore::stored_points(std::uint64_t points) const {
  std::vector<bool> stored(static_cast<std::size_t>(points), false);
  Statement stmt(db_, "SELECT idx FROM points");
  while (stmt && sqlite3_step(stmt.get()) == SQLITE_ROW)
    if (const std::uint64_t i = stmt.integer(0); i < points)
      stored[static_cast<std::size_t>(i)] = true;
  return stored;
}

bool SweepStore::write_point(const SweepPointRecord& record, std::string& why) {
  return write_points(std::span(&record, 1), why);
}

bool SweepStore::write_points(std::span<const SweepPointRecord> records, std::string& why) {
  if (!exec(db_, "BEGIN IMMEDIATE", why)) return false;
  const auto fail = [&] {
    why = error_of(db_);
    std::string ignored;
    exec(db_, "ROLLBACK", ignored);
    return false;
  };
  {
    Statement point(db_, "INSERT INTO points(idx, arch_hash, finished_at) VALUES (?1, ?2, ?3)");
    Statement value(db_, "INSERT INTO point_values(point, axis, value) VALUES (?1, ?2, ?3)");
    std::string placeholders = "?1";
    for (std::size_t i = 2; i <= 1 + result_field_count(); ++i)
      placeholders += fmt::format(", ?{}", i);
    Statement row(db_, fmt::format("INSERT INTO results VALUES ({})", placeholders));
    if (!point || !value || !row) return fail();
    const std::string finished_at = now_utc();
    for (const SweepPointRecord& record : records) {
      sqlite3_reset(point.get());
      point.bind(1, record.index);
      point.bind(2, record.arch_hash);
      point.bind(3, finished_at);
      if (sqlite3_step(point.get()) != SQLITE_DONE) return fail();
      for (std::size_t a = 0; a < record.values.size(); ++a) {
        sqlite3_reset(value.get());
        value.bind(1, record.index);
        value.bind(2, std::uint64_t{a});
        value.bind(3, std::uint64_t{record.values[a]});
        if (sqlite3_step(value.get()) != SQLITE_DONE) return fail();
      }
      for (const SweepRow& r : record.rows) {
        sqlite3_reset(row.get());
        row.bind(1, record.index);
        int column = 2;
        visit_result_fields(r, [&](std::string_view, const auto& field) {
          using T = std::remove_cvref_t<decltype(field)>;
          if constexpr (kNamed<T>)
            row.bind(column++, field_text(field));
          else if constexpr (std::is_same_v<T, bool>)
            row.bind(column++, std::uint64_t{field ? 1U : 0U});
          else
            row.bind(column++, field);
        });
        if (sqlite3_step(row.get()) != SQLITE_DONE) return fail();
      }
    }
  }
  return exec(db_, "COMMIT", why) || fail();
}

std::vector<SweepRow> SweepStore::rows() const {
  std::vector<SweepRow> rows;
  for_each_row([&](const SweepRow& r) { rows.push_back(r); });
  return rows;
}

std::uint64_t SweepStore::for_each_row(const std::function<void(const SweepRow&)>& each,
                                       bool summaries) const {
  std::string columns;
  const SweepRow empty;
  visit_result_fields(empty, [&](std::string_view name, const auto&) {
    columns += summaries || name != "run_summary" ? fmt::format(", r.{}", name)
                                                   : std::string(", ''");
  });
  Statement stmt(db_, fmt::format("SELECT p.idx, p.arch_hash{} FROM points p JOIN "
                                  "results r ON r.point = p.idx ORDER BY p.idx, r.workload",
                                  columns));
  // The points' values, read beside the rows in the same order (both by point index).
  Statement values(db_, "SELECT point, value FROM point_values ORDER BY point, axis");
  bool value_pending = values && sqlite3_step(values.get()) == SQLITE_ROW;
  std::uint64_t count = 0;
  SweepRow r;
  bool first = true;
  while (stmt && sqlite3_step(stmt.get()) == SQLITE_ROW) {
    const std::uint64_t point = stmt.integer(0);
    if (first || point != r.point) {
      r.values.clear();
      while (value_pending && values.integer(0) < point)  // a point without results: skipped
        value_pending = sqlite3_step(values.get()) == SQLITE_ROW;
      for (; value_pending && values.integer(0) == point;
           value_pending = sqlite3_step(values.get()) == SQLITE_ROW)
        r.values.push_back(static_cast<std::uint32_t>(values.integer(1)));
      first = false;
    }
    r.point = point;
    r.arch_hash = stmt.text(1);
    int column = 2;
    std::optional<std::string> unknown;  // "column 'text'" of a name this coda does not know
    visit_result_fields(r, [&](std::string_view name, auto& field) {
      using T = std::remove_cvref_t<decltype(field)>;
      if constexpr (kNamed<T>) {
        const std::string text = stmt.text(column++);
        if (!parse_field(text, field) && !unknown) unknown = fmt::format("{} '{}'", name, text);
      } else if constexpr (std::is_same_v<T, std::string>) {
        field = stmt.text(column++);
      } else if constexpr (std::is_same_v<T, double>) {
        field = stmt.real(column++);
      } else if constexpr (std::is_same_v<T, bool>) {
        field = stmt.integer(column++) != 0;
      } else {
        field = stmt.integer(column++);
      }
    });
    if (unknown) {  // never misread: a name this coda does not know makes an error row
      r.status = RowStatus::Error;
      r.reason = fmt::format("the store holds {}, which this coda does not know", *unknown);
    }
    each(r);
    ++count;
  }
  return count;
}

}  // namespace coda::dse

namespace coda::dse {
namespace {

// The wire form of encode_records, hand-written rather than a library's: nlohmann's CBOR reader
// built a DOM and read each string byte by byte, 0.2 ms per point on the rank that writes the
// store, which held two MPI ranks to 1.5x of one; the record is a fixed list of strings,
// integers and doubles, so a length-prefixed layout reads with one copy per string:
//   "CSR2", u64 record count, then per record: u64 index, u64 axis count and a u64 per axis (the
//   value indices), str arch_hash, u64 row count, and per row its fields in SweepRow's order
//   (u64 for the integers and the flag, a double's IEEE-754 bits as a u64, a str as its u64
//   length then its bytes). A row's point, values and arch_hash are its record's.
// Integers are little-endian whatever the host, so the ranks need not share a byte order.
constexpr std::string_view kRecordsMagic = "CSR2";

class RecordWriter {
 public:
  explicit RecordWriter(std::size_t capacity) { bytes_.reserve(capacity); }
  void u64(std::uint64_t v) {
    std::array<std::uint8_t, 8> le{};
    for (std::size_t i = 0; i < 8; ++i) le[i] = static_cast<std::uint8_t>(v >> (8 * i));
    bytes_.insert(bytes_.end(), le.begin(), le.end());
  }
  void real(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
  void str(std::string_view s) {
    u64(s.size());
    raw(s);
  }
  void raw(std::string_view s) { bytes_.insert(bytes_.end(), s.begin(), s.end()); }
  std::vector<std::uint8_t> take() { return std::move(bytes_); }

 private:
  std::vector<std::uint8_t> bytes_;
};

// Reads what RecordWriter wrote. Every read checks the bytes left and fails (false) rather than
// read past the end, so any bytes are safe to read (fuzz/sweep_records_fuzz.cpp).
class RecordReader {
 public:
  explicit RecordReader(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}
  bool u64(std::uint64_t& v) {
    if (left() < 8) return false;
    v = 0;
    for (std::size_t i = 0; i < 8; ++i) v |= std::uint64_t{bytes_[at_ + i]} << (8 * i);
    at_ += 8;
    return true;
  }
  bool real(double& v) {
    std::uint64_t bits = 0;
    if (!u64(bits)) return false;
    v = std::bit_cast<double>(bits);
    return true;
  }
  bool flag(bool& v) {
    std::uint64_t bit = 0;
    if (!u64(bit) || bit > 1) return false;
    v = bit == 1;
    return true;
  }
  bool str(std::string& s) {
    std::uint64_t size = 0;
    if (!u64(size) || size > left()) return false;
    const auto begin = bytes_.begin() + static_cast<std::ptrdiff_t>(at_);
    s.assign(begin, begin + static_cast<std::ptrdiff_t>(size));
    at_ += static_cast<std::size_t>(size);
    return true;
  }
  bool raw(std::string_view expected) {
    const auto begin = bytes_.begin() + static_cast<std::ptrdiff_t>(at_);
    if (left() < expected.size() || !std::equal(expected.begin(), expected.end(), begin))
      return false;
    at_ += expected.size();
    return true;
  }
  // A count of items of at least `min_bytes` each: false when the bytes left cannot hold that
  // many (so a corrupt count cannot make the reader allocate for it).
  bool count(std::uint64_t& n, std::size_t min_bytes) { return u64(n) && n <= left() / min_bytes; }
  std::size_t left() const { return bytes_.size() - at_; }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

// The fewest bytes a row and a record take: their fixed fields with every string and list empty,
// 8 bytes each (a u64, a double's bits, a string's length). A row: its result fields; a record:
// 3 integers (index, axis count, row count) and a string.
std::size_t min_row_bytes() {
  static const std::size_t bytes = std::size_t{8} * result_field_count();  // immutable
  return bytes;
}
constexpr std::size_t kMinRecordBytes = std::size_t{8} * (3 + 1);

void write_row(RecordWriter& w, const SweepRow& r) {
  visit_result_fields(r, [&](std::string_view, const auto& field) {
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (kNamed<T>) w.str(field_text(field));
    else if constexpr (std::is_same_v<T, std::string>) w.str(field);
    else if constexpr (std::is_same_v<T, double>) w.real(field);
    else if constexpr (std::is_same_v<T, bool>) w.u64(field ? 1 : 0);
    else w.u64(field);
  });
}

bool read_row(RecordReader& in, SweepRow& r) {
  bool ok = true;
  visit_result_fields(r, [&](std::string_view, auto& field) {
    if (!ok) return;
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (kNamed<T>) {
      std::string text;
      ok = in.str(text) && parse_field(text, field);  // another name: refused, never misread
    } else if constexpr (std::is_same_v<T, std::string>) {
      ok = in.str(field);
    } else if constexpr (std::is_same_v<T, double>) {
      ok = in.real(field);
    } else if constexpr (std::is_same_v<T, bool>) {
      ok = in.flag(field);
    } else {
      ok = in.u64(field);
    }
  });
  return ok;
}

// The bytes write_row takes for `r`.
std::size_t row_bytes(const SweepRow& r) {
  std::size_t strings = 0;
  visit_result_fields(r, [&](std::string_view, const auto& field) {
    using T = std::remove_cvref_t<decltype(field)>;
    if constexpr (kNamed<T>) strings += field_text(field).size();
    else if constexpr (std::is_same_v<T, std::string>) strings += field.size();
  });
  return min_row_bytes() + strings;
}

}  // namespace

std::vector<std::uint8_t> encode_records(std::span<const SweepPointRecord> records) {
  // Sized first, so that the bytes are written into one allocation (the batches an MPI rank
  // sends are about 9 KB a point).
  std::size_t size = kRecordsMagic.size() + 8;
  for (const SweepPointRecord& record : records) {
    size += kMinRecordBytes + 8 * record.values.size() + record.arch_hash.size();
    for (const SweepRow& r : record.rows) size += row_bytes(r);
  }
  RecordWriter w(size);
  w.raw(kRecordsMagic);
  w.u64(records.size());
  for (const SweepPointRecord& record : records) {
    w.u64(record.index);
    w.u64(record.values.size());
    for (const std::uint32_t v : record.values) w.u64(v);
    w.str(record.arch_hash);
    w.u64(record.rows.size());
    for (const SweepRow& r : record.rows) write_row(w, r);
  }
  return w.take();
}

std::optional<std::vector<SweepPointRecord>> decode_records(
    std::span<const std::uint8_t> bytes) {
  RecordReader in(bytes);
  std::uint64_t count = 0;
  if (!in.raw(kRecordsMagic) || !in.count(count, kMinRecordBytes)) return std::nullopt;
  std::vector<SweepPointRecord> records(static_cast<std::size_t>(count));
  for (SweepPointRecord& record : records) {
    std::uint64_t axes = 0, rows = 0;
    if (!in.u64(record.index) || !in.count(axes, 8)) return std::nullopt;
    record.values.resize(static_cast<std::size_t>(axes));
    for (std::uint32_t& v : record.values) {
      std::uint64_t value = 0;
      if (!in.u64(value) || value > UINT32_MAX) return std::nullopt;
      v = static_cast<std::uint32_t>(value);
    }
    if (!in.str(record.arch_hash) || !in.count(rows, min_row_bytes())) return std::nullopt;
    record.rows.resize(static_cast<std::size_t>(rows));
    for (SweepRow& r : record.rows) {
      if (!read_row(in, r)) return std::nullopt;
      r.point = record.index;
      r.values = record.values;
      r.arch_hash = record.arch_hash;
    }
  }
  if (in.left() != 0) return std::nullopt;  // trailing bytes: not what encode_records wrote
  return records;
}

}  // namespace coda::dse
