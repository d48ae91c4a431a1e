#include "dse/sweep_store.h"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <optional>
#include <sstream>
#include <string_view>
#include <system_error>

#include <fmt/format.h>
#include <sqlite3.h>

namespace coda::dse {

std::string_view to_string(RowStatus status) {
  switch (status) {
    case RowStatus::Ok: return "ok";
    case RowStatus::Infeasible: return "infeasible";
    case RowStatus::Error: return "error";
  }
  return "?";
}

std::optional<RowStatus> parse_row_status(std::string_view text) {
  for (const RowStatus s : {RowStatus::Ok, RowStatus::Infeasible, RowStatus::Error})
    if (to_string(s) == text) return s;
  return std::nullopt;
}

namespace {

constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points(
  idx INTEGER PRIMARY KEY,
  axis_values TEXT NOT NULL,
  arch_hash TEXT NOT NULL,
  finished_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results(
  point INTEGER NOT NULL REFERENCES points(idx),
  workload INTEGER NOT NULL,
  workload_name TEXT NOT NULL,
  status TEXT NOT NULL,
  reason TEXT NOT NULL,
  latency_s REAL NOT NULL,
  throughput_per_s REAL NOT NULL,
  energy_j REAL NOT NULL,
  edp_js REAL NOT NULL,
  perf_per_watt REAL NOT NULL,
  perf_per_mm2 REAL NOT NULL,
  area_mm2 REAL NOT NULL,
  power_w REAL NOT NULL,
  memory_status TEXT NOT NULL,
  area_verdict TEXT NOT NULL,
  power_verdict TEXT NOT NULL,
  memory_verdict TEXT NOT NULL,
  feasible INTEGER NOT NULL,
  run_summary TEXT NOT NULL,
  PRIMARY KEY(point, workload));
)sql";

// Bumped when the tables change; a store of another schema is not resumed. 2: results.run_json
// (the whole RunResult) became run_summary (dse/sweep.h run_summary).
constexpr std::string_view kStoreSchema = "2";

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
                                               const std::string& spec_name, std::string& why) {
  std::error_code ec;  // an unusable path fails below, at sqlite3_open, with its reason
  if (std::filesystem::exists(file, ec)) {
    why = fmt::format("'{}' exists: a previous sweep's store", file.string());
    return nullptr;
  }
  sqlite3* db = open_db(file, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, why);
  if (db == nullptr) return nullptr;
  std::unique_ptr<SweepStore> store(new SweepStore(db));
  if (!exec(db, "BEGIN", why) || !exec(db, kSchema, why)) return nullptr;
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
                      "writes {})",
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
    Statement point(db_,
                    "INSERT INTO points(idx, axis_values, arch_hash, finished_at) "
                    "VALUES (?1, ?2, ?3, ?4)");
    Statement row(db_,
                  "INSERT INTO results VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                  "?13, ?14, ?15, ?16, ?17, ?18, ?19)");
    if (!point || !row) return fail();
    const std::string finished_at = now_utc();
    for (const SweepPointRecord& record : records) {
      sqlite3_reset(point.get());
      point.bind(1, record.index);
      point.bind(2, record.axis_values);
      point.bind(3, record.arch_hash);
      point.bind(4, finished_at);
      if (sqlite3_step(point.get()) != SQLITE_DONE) return fail();
      for (const SweepRow& r : record.rows) {
        sqlite3_reset(row.get());
        row.bind(1, record.index);
        row.bind(2, r.workload);
        row.bind(3, r.workload_name);
        row.bind(4, std::string(to_string(r.status)));
        row.bind(5, r.reason);
        row.bind(6, r.latency_s);
        row.bind(7, r.throughput_per_s);
        row.bind(8, r.energy_j);
        row.bind(9, r.edp_js);
        row.bind(10, r.perf_per_watt);
        row.bind(11, r.perf_per_mm2);
        row.bind(12, r.area_mm2);
        row.bind(13, r.power_w);
        row.bind(14, r.memory_status);
        row.bind(15, r.area_verdict);
        row.bind(16, r.power_verdict);
        row.bind(17, r.memory_verdict);
        row.bind(18, std::uint64_t{r.feasible ? 1U : 0U});
        row.bind(19, r.run_summary);
        if (sqlite3_step(row.get()) != SQLITE_DONE) return fail();
      }
    }
  }
  return exec(db_, "COMMIT", why) || fail();
}

std::vector<SweepRow> SweepStore::rows() const {
  std::vector<SweepRow> rows;
  Statement stmt(db_,
                 "SELECT p.idx, p.axis_values, p.arch_hash, r.workload, r.workload_name, "
                 "r.status, r.reason, r.latency_s, r.throughput_per_s, r.energy_j, r.edp_js, "
                 "r.perf_per_watt, r.perf_per_mm2, r.area_mm2, r.power_w, r.memory_status, "
                 "r.area_verdict, r.power_verdict, r.memory_verdict, r.feasible, r.run_summary "
                 "FROM points p JOIN results r ON r.point = p.idx ORDER BY p.idx, r.workload");
  while (stmt && sqlite3_step(stmt.get()) == SQLITE_ROW) {
    SweepRow r;
    r.point = stmt.integer(0);
    r.axis_values = stmt.text(1);
    r.arch_hash = stmt.text(2);
    r.workload = stmt.integer(3);
    r.workload_name = stmt.text(4);
    const std::string status = stmt.text(5);
    r.reason = stmt.text(6);
    if (const auto parsed = parse_row_status(status)) {
      r.status = *parsed;
    } else {  // never misread: a status this coda does not know is an error row that says so
      r.status = RowStatus::Error;
      r.reason = fmt::format("the store holds status '{}', which this coda does not know", status);
    }
    r.latency_s = stmt.real(7);
    r.throughput_per_s = stmt.real(8);
    r.energy_j = stmt.real(9);
    r.edp_js = stmt.real(10);
    r.perf_per_watt = stmt.real(11);
    r.perf_per_mm2 = stmt.real(12);
    r.area_mm2 = stmt.real(13);
    r.power_w = stmt.real(14);
    r.memory_status = stmt.text(15);
    r.area_verdict = stmt.text(16);
    r.power_verdict = stmt.text(17);
    r.memory_verdict = stmt.text(18);
    r.feasible = stmt.integer(19) != 0;
    r.run_summary = stmt.text(20);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace coda::dse

namespace coda::dse {
namespace {

// The wire form of encode_records, hand-written rather than a library's: nlohmann's CBOR reader
// built a DOM and read each string byte by byte, 0.2 ms per point on the rank that writes the
// store, which held two MPI ranks to 1.5x of one; the record is a fixed list of strings,
// integers and doubles, so a length-prefixed layout reads with one copy per string:
//   "CSR1", u64 record count, then per record: u64 index, str axis_values, str arch_hash,
//   u64 row count, and per row its fields in SweepRow's order (u64 for the integers and the
//   flag, a double's IEEE-754 bits as a u64, a str as its u64 length then its bytes).
// Integers are little-endian whatever the host, so the ranks need not share a byte order.
constexpr std::string_view kRecordsMagic = "CSR1";

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

// The fewest bytes a row and a record take: their fixed fields with every string empty. A row:
// 3 integers (point, workload, feasible), 8 doubles, 10 strings; a record: 2 integers (index,
// row count), 2 strings.
constexpr std::size_t kMinRowBytes = std::size_t{8} * (3 + 8 + 10);
constexpr std::size_t kMinRecordBytes = std::size_t{8} * (2 + 2);

void write_row(RecordWriter& w, const SweepRow& r) {
  w.u64(r.point);
  w.str(r.axis_values);
  w.str(r.arch_hash);
  w.u64(r.workload);
  w.str(r.workload_name);
  w.str(std::string(to_string(r.status)));
  w.str(r.reason);
  for (double v : {r.latency_s, r.throughput_per_s, r.energy_j, r.edp_js, r.perf_per_watt,
                   r.perf_per_mm2, r.area_mm2, r.power_w})
    w.real(v);
  for (const std::string* v :
       {&r.memory_status, &r.area_verdict, &r.power_verdict, &r.memory_verdict})
    w.str(*v);
  w.u64(r.feasible ? 1 : 0);
  w.str(r.run_summary);
}

bool read_row(RecordReader& in, SweepRow& r) {
  bool ok = in.u64(r.point) && in.str(r.axis_values) && in.str(r.arch_hash) && in.u64(r.workload);
  std::string status;
  ok = ok && in.str(r.workload_name) && in.str(status) && in.str(r.reason);
  const auto parsed = parse_row_status(status);
  ok = ok && parsed.has_value();  // a record with another status is refused, never misread
  if (parsed) r.status = *parsed;
  for (double* v : {&r.latency_s, &r.throughput_per_s, &r.energy_j, &r.edp_js, &r.perf_per_watt,
                    &r.perf_per_mm2, &r.area_mm2, &r.power_w})
    ok = ok && in.real(*v);
  for (std::string* v : {&r.memory_status, &r.area_verdict, &r.power_verdict, &r.memory_verdict})
    ok = ok && in.str(*v);
  return ok && in.flag(r.feasible) && in.str(r.run_summary);
}

// The bytes write_row takes for `r`.
std::size_t row_bytes(const SweepRow& r) {
  std::size_t strings = to_string(r.status).size();
  for (const std::string* v :
       {&r.axis_values, &r.arch_hash, &r.workload_name, &r.reason, &r.memory_status,
        &r.area_verdict, &r.power_verdict, &r.memory_verdict, &r.run_summary})
    strings += v->size();
  return kMinRowBytes + strings;
}

}  // namespace

std::vector<std::uint8_t> encode_records(std::span<const SweepPointRecord> records) {
  // Sized first, so that the bytes are written into one allocation (the batches an MPI rank
  // sends are about 9 KB a point).
  std::size_t size = kRecordsMagic.size() + 8;
  for (const SweepPointRecord& record : records) {
    size += kMinRecordBytes + record.axis_values.size() + record.arch_hash.size();
    for (const SweepRow& r : record.rows) size += row_bytes(r);
  }
  RecordWriter w(size);
  w.raw(kRecordsMagic);
  w.u64(records.size());
  for (const SweepPointRecord& record : records) {
    w.u64(record.index);
    w.str(record.axis_values);
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
    std::uint64_t rows = 0;
    if (!in.u64(record.index) || !in.str(record.axis_values) || !in.str(record.arch_hash) ||
        !in.count(rows, kMinRowBytes))
      return std::nullopt;
    record.rows.resize(static_cast<std::size_t>(rows));
    for (SweepRow& r : record.rows)
      if (!read_row(in, r)) return std::nullopt;
  }
  if (in.left() != 0) return std::nullopt;  // trailing bytes: not what encode_records wrote
  return records;
}

}  // namespace coda::dse
