// The profile written at context release (BRAID_PROFILE / braid_context_options.profile_path): what
// happens to the path (a FIFO or a symlink is written through, never replaced by a regular file), that
// a failed write leaves no temporary behind, and that the release reports the failure; that the trace
// is strict JSON whatever the names in it, with one named track per host thread that waited.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "support.h"

namespace {

// A fresh directory under /tmp, removed (with what is left in it) at the end.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = "/tmp/braid-profile-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    for (const std::string& name : entries()) ::unlink((path + "/" + name).c_str());
    ::rmdir(path.c_str());
  }
  std::set<std::string> entries() const {
    std::set<std::string> out;
    if (DIR* d = ::opendir(path.c_str())) {
      while (dirent* e = ::readdir(d))
        if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
      ::closedir(d);
    }
    return out;
  }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// A context on cpu:0 that profiles into `path`; one small op has run on it.
braid_context profiled_context(const std::string& path) {
  braid_context_options o = BRAID_CONTEXT_OPTIONS_INIT;
  o.backends = "cpu";
  o.profile_path = path.c_str();
  braid_context ctx = nullptr;
  BRAID_CHECK_OK(braid_context_create(&o, &ctx));
  test::T x = test::full(ctx, 0, BRAID_FLOAT32, {4}, 1.0);
  test::T y;
  BRAID_CHECK_OK(braid_binary_scalar(BRAID_BINARY_ADD, x.t, 1.0, 0, y.out()));
  BRAID_CHECK_OK(braid_tensor_wait_to_read(y.t));
  return ctx;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A strict JSON reader (RFC 8259: no raw control characters in strings, only the defined escapes,
// well-formed UTF-8, nothing after the value). A name written unescaped makes it throw.
struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json* get(std::string_view key) const {
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  std::string str(std::string_view key) const {
    const Json* v = get(key);
    return v && v->kind == kString ? v->string : "";
  }
  int integer(std::string_view key) const {
    const Json* v = get(key);
    return v && v->kind == kNumber ? static_cast<int>(v->number) : -1;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string_view text) : s_(text) {}
  Json document() {
    Json v = value();
    space();
    if (i_ != s_.size()) error("text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) const {
    throw std::runtime_error(what + " at byte " + std::to_string(i_));
  }
  void space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool take(char c) {
    space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) error(std::string("expected '") + c + "'");
  }
  void literal(std::string_view word) {
    if (s_.substr(i_, word.size()) != word) error("bad literal");
    i_ += word.size();
  }
  Json value() {
    space();
    if (i_ >= s_.size()) error("unexpected end");
    Json v;
    const char c = s_[i_];
    if (c == '{') {
      v.kind = Json::kObject;
      ++i_;
      if (take('}')) return v;
      do {
        space();
        std::string key = string();
        expect(':');
        v.members.emplace_back(std::move(key), value());
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      v.kind = Json::kArray;
      ++i_;
      if (take(']')) return v;
      do v.items.push_back(value());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::kString;
      v.string = string();
    } else if (c == 't' || c == 'f') {
      v.kind = Json::kBool;
      v.boolean = c == 't';
      literal(c == 't' ? "true" : "false");
    } else if (c == 'n') {
      literal("null");
    } else {
      v.kind = Json::kNumber;
      v.number = number();
    }
    return v;
  }
  double number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t from = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == from) error("expected a digit");
    };
    if (s_[i_] == '-') ++i_;
    if (i_ < s_.size() && s_[i_] == '0')
      ++i_;
    else
      digits();
    if (i_ < s_.size() && s_[i_] == '.') ++i_, digits();
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    return std::stod(std::string(s_.substr(start, i_ - start)));
  }
  unsigned hex4() {
    if (i_ + 4 > s_.size()) error("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9')
        v |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        v |= static_cast<unsigned>(h - 'A' + 10);
      else
        error("bad hex digit");
    }
    return v;
  }
  static void utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xc0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xe0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  std::string string() {
    if (i_ >= s_.size() || s_[i_] != '"') error("expected a string");
    ++i_;
    std::string out;
    while (true) {
      if (i_ >= s_.size()) error("unterminated string");
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) error("raw control character in a string");
      if (c == '\\') {
        if (++i_ >= s_.size()) error("unterminated escape");
        const char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            unsigned cp = hex4();
            if (cp >= 0xdc00 && cp <= 0xdfff) error("lone low surrogate");
            if (cp >= 0xd800 && cp <= 0xdbff) {
              if (s_.substr(i_, 2) != "\\u") error("lone high surrogate");
              i_ += 2;
              const unsigned low = hex4();
              if (low < 0xdc00 || low > 0xdfff) error("bad low surrogate");
              cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            }
            utf8(out, cp);
            break;
          }
          default: error("unknown escape");
        }
        continue;
      }
      // Raw bytes: well-formed UTF-8 only.
      size_t len = c < 0x80                 ? 1
                   : c >= 0xc2 && c <= 0xdf ? 2
                   : c >= 0xe0 && c <= 0xef ? 3
                   : c >= 0xf0 && c <= 0xf4 ? 4
                                            : 0;
      if (len == 0 || i_ + len > s_.size()) error("bad UTF-8");
      unsigned cp = len == 1 ? c : c & (0x7fu >> len);
      for (size_t k = 1; k < len; ++k) {
        const auto b = static_cast<unsigned char>(s_[i_ + k]);
        if ((b & 0xc0) != 0x80) error("bad UTF-8 continuation");
        cp = (cp << 6) | (b & 0x3fu);
      }
      if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
        error("overlong or surrogate UTF-8");
      out.append(s_.substr(i_, len));
      i_ += len;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

// The trace's tracks: "process_name" and "thread_name" metadata by pid and (pid, tid).
struct Tracks {
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  explicit Tracks(const Json& trace) {
    for (const Json& e : trace.get("traceEvents")->items) {
      if (e.str("ph") != "M") continue;
      const std::string name = e.get("args")->str("name");
      if (e.str("name") == "process_name") processes[e.integer("pid")] = name;
      if (e.str("name") == "thread_name") threads[{e.integer("pid"), e.integer("tid")}] = name;
    }
  }
  int pid_of(const std::string& process) const {
    for (const auto& [pid, name] : processes)
      if (name == process) return pid;
    return -1;
  }
};

mode_t kind_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode & S_IFMT;
}

}  // namespace

TEST_CASE("profile: a regular file is written (atomically) and nothing else is left in its folder") {
  TempDir dir;
  const std::string path = dir / "trace.json";
  {
    std::ofstream old(path);
    old << "an older trace";
  }
  ::chmod(path.c_str(), 0640);
  BRAID_CHECK_OK(braid_context_release(profiled_context(path)));
  CHECK(read_file(path).find("traceEvents") != std::string::npos);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 07777) == 0640);  // replacing the file kept its permissions
  CHECK(dir.entries() == std::set<std::string>{"trace.json"});
}

TEST_CASE("profile: a FIFO is written through, never replaced by a regular file") {
  TempDir dir;
  const std::string fifo = dir / "trace.fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A reader first (non-blocking, so neither side waits): the trace of one op fits in the pipe.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  REQUIRE(reader >= 0);
  BRAID_CHECK_OK(braid_context_release(profiled_context(fifo)));
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = ::read(reader, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  ::close(reader);
  CHECK(kind_of(fifo) == S_IFIFO);
  CHECK(got.find("traceEvents") != std::string::npos);
  CHECK(dir.entries() == std::set<std::string>{"trace.fifo"});

  // No reader: the release does not hang; it reports the failure (everything is still released).
  braid_context ctx = profiled_context(fifo);
  CHECK(braid_context_release(ctx) == BRAID_ERR_IO);
  const std::string msg = braid_last_error();
  CHECK(msg.find("braid_context_release") != std::string::npos);
  CHECK(msg.find(fifo) != std::string::npos);
  CHECK(kind_of(fifo) == S_IFIFO);
  CHECK(dir.entries() == std::set<std::string>{"trace.fifo"});
}

TEST_CASE("profile: a symlink is written through to its target and stays a symlink") {
  TempDir dir;
  const std::string target = dir / "target.json", link = dir / "link.json";
  {
    std::ofstream old(target);
    old << std::string(100000, 'x');  // longer than the trace: the old contents must not survive
  }
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  BRAID_CHECK_OK(braid_context_release(profiled_context(link)));
  CHECK(kind_of(link) == S_IFLNK);
  const std::string json = read_file(target);
  CHECK(json.find("traceEvents") != std::string::npos);
  CHECK(json.find('x') == std::string::npos);
  CHECK(dir.entries() == std::set<std::string>{"target.json", "link.json"});
}

TEST_CASE("profile: a profile that cannot be written fails the release that destroys the context") {
  TempDir dir;
  SUBCASE("no such folder") {
    const std::string path = dir / "missing/trace.json";
    CHECK(braid_context_release(profiled_context(path)) == BRAID_ERR_IO);
    CHECK(std::string(braid_last_error()).find(path) != std::string::npos);
  }
  SUBCASE("a directory") {
    const std::string path = dir / "sub";
    REQUIRE(::mkdir(path.c_str(), 0700) == 0);
    CHECK(braid_context_release(profiled_context(path)) == BRAID_ERR_IO);
    CHECK(kind_of(path) == S_IFDIR);
    CHECK(dir.entries() == std::set<std::string>{"sub"});
  }
  SUBCASE("the write fails half way: the temporary file is removed") {
    // A file size limit makes write() fail with EFBIG (SIGXFSZ ignored) once the temporary exists.
    const std::string path = dir / "trace.json";
    braid_context ctx = profiled_context(path);
    struct rlimit old {};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit small = old;
    small.rlim_cur = 16;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    const braid_status st = braid_context_release(ctx);
    const std::string msg = braid_last_error();
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CHECK(st == BRAID_ERR_IO);
    CHECK(msg.find("cannot write profile file") != std::string::npos);
    CHECK(dir.entries().empty());
  }
  SUBCASE("a full device: the write itself fails (ENOSPC) on a path written in place") {
    if (::access("/dev/full", W_OK) != 0) {
      MESSAGE("skipped: no writable /dev/full here");
      return;
    }
    CHECK(braid_context_release(profiled_context("/dev/full")) == BRAID_ERR_IO);
    const std::string msg = braid_last_error();
    CHECK(msg.find("cannot write profile file '/dev/full'") != std::string::npos);
    CHECK(kind_of("/dev/full") == S_IFCHR);
  }
  SUBCASE("braid_profiler_stop reports it too") {
    braid_context ctx = profiled_context("");
    BRAID_CHECK_OK(braid_profiler_start(ctx));
    const std::string path = dir / "missing/stopped.json";
    CHECK(braid_profiler_stop(ctx, path.c_str()) == BRAID_ERR_IO);
    CHECK(std::string(braid_last_error()).find(path) != std::string::npos);
    BRAID_CHECK_OK(braid_context_release(ctx));
  }
  SUBCASE("the last reference is a tensor's: its release reports it") {
    const std::string path = dir / "missing/trace.json";
    braid_context ctx = profiled_context(path);
    test::T x = test::full(ctx, 0, BRAID_FLOAT32, {4}, 1.0);
    BRAID_CHECK_OK(braid_context_release(ctx));  // x keeps the context alive
    CHECK(braid_tensor_release(x.t) == BRAID_ERR_IO);
    x.t = nullptr;
    CHECK(std::string(braid_last_error()).find(path) != std::string::npos);
  }
}

TEST_CASE("profile: the trace is strict JSON; each host thread that waits has its own named track") {
  TempDir dir;
  const std::string path = dir / "trace.json";
  // The main thread waits first (profiled_context), unnamed: "host thread 1". Then a thread whose name
  // needs every kind of escaping: a quote, a backslash, control characters, a two-byte character, and
  // the first two bytes of a three-byte one (a name the kernel cut at 15 bytes ends like this).
  const std::string odd = "a\"b\\c\x01\t\xc3\xa9\xe2\x82";
  const std::string odd_read = "a\"b\\c\x01\t\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd";  // each stray byte: U+FFFD
  braid_context ctx = profiled_context(path);
  auto wait_on_a_thread = [&](const std::string* name) {
    braid_status named = BRAID_OK, made = BRAID_OK, waited = BRAID_OK;
    std::thread t([&] {
      if (name && ::pthread_setname_np(::pthread_self(), name->c_str()) != 0) named = BRAID_ERR_INTERNAL;
      const int64_t shape[1] = {4};
      braid_tensor x = nullptr;
      made = braid_full(ctx, 0, BRAID_FLOAT32, 1, shape, 2.0, &x);
      if (made == BRAID_OK) waited = braid_tensor_wait_to_read(x);
      if (x) braid_tensor_release(x);
    });
    t.join();
    CHECK(named == BRAID_OK);
    CHECK(made == BRAID_OK);
    CHECK(waited == BRAID_OK);
  };
  wait_on_a_thread(&odd);     // host thread 2, named
  wait_on_a_thread(nullptr);  // host thread 3, carries the program's name: no name of its own
  BRAID_CHECK_OK(braid_context_release(ctx));

  const std::string text = read_file(path);
  CHECK(text.find("\\u0001") != std::string::npos);
  Json trace;
  try {
    trace = JsonReader(text).document();
  } catch (const std::exception& e) {
    FAIL("the trace is not strict JSON: " << e.what());
  }
  REQUIRE(trace.get("traceEvents") != nullptr);
  const Tracks tracks(trace);
  const int host = tracks.pid_of("host");
  REQUIRE(host >= 0);
  CHECK(tracks.processes.at(0).rfind("cpu:0 (", 0) == 0);
  CHECK(tracks.threads.at({0, 0}) == "compute");

  // Every wait is on a named host track; the three threads are three tracks.
  std::map<std::string, int> waits_by_track;
  for (const Json& e : trace.get("traceEvents")->items) {
    if (e.str("ph") != "X" || e.str("cat") != "wait") continue;
    CHECK(e.integer("pid") == host);
    auto it = tracks.threads.find({host, e.integer("tid")});
    REQUIRE_MESSAGE(it != tracks.threads.end(), "a wait on tid " << e.integer("tid") << " has no thread_name");
    ++waits_by_track[it->second];
  }
  CHECK(waits_by_track.size() == 3);
  CHECK(waits_by_track.count("host thread 1") == 1);
  CHECK(waits_by_track.count(odd_read) == 1);
  CHECK(waits_by_track.count("host thread 3") == 1);
}
