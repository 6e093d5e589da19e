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
#include <string>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

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

using Json = nlohmann::json;

// A field of a trace event, or the value when the event lacks it or holds another type.
std::string str(const Json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}
int integer(const Json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_number() ? it->get<int>() : -1;
}

// The trace's tracks: "process_name" and "thread_name" metadata by pid and (pid, tid).
struct Tracks {
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  explicit Tracks(const Json& trace) {
    for (const Json& e : trace.at("traceEvents")) {
      if (str(e, "ph") != "M") continue;
      const std::string name = e.contains("args") ? str(e.at("args"), "name") : "";
      if (str(e, "name") == "process_name") processes[integer(e, "pid")] = name;
      if (str(e, "name") == "thread_name") threads[{integer(e, "pid"), integer(e, "tid")}] = name;
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
  // nlohmann's parser is strict RFC 8259: it refuses raw control characters in strings, unknown escapes,
  // lone surrogates, ill-formed UTF-8 and text after the value, so a name written unescaped fails here.
  Json trace;
  try {
    trace = Json::parse(text);
  } catch (const std::exception& e) {
    FAIL("the trace is not strict JSON: " << e.what());
  }
  REQUIRE(trace.contains("traceEvents"));
  const Tracks tracks(trace);
  const int host = tracks.pid_of("host");
  REQUIRE(host >= 0);
  CHECK(tracks.processes.at(0).rfind("cpu:0 (", 0) == 0);
  CHECK(tracks.threads.at({0, 0}) == "compute");

  // Every wait is on a named host track; the three threads are three tracks.
  std::map<std::string, int> waits_by_track;
  for (const Json& e : trace.at("traceEvents")) {
    if (str(e, "ph") != "X" || str(e, "cat") != "wait") continue;
    CHECK(integer(e, "pid") == host);
    auto it = tracks.threads.find({host, integer(e, "tid")});
    REQUIRE_MESSAGE(it != tracks.threads.end(), "a wait on tid " << integer(e, "tid") << " has no thread_name");
    ++waits_by_track[it->second];
  }
  CHECK(waits_by_track.size() == 3);
  CHECK(waits_by_track.count("host thread 1") == 1);
  CHECK(waits_by_track.count(odd_read) == 1);
  CHECK(waits_by_track.count("host thread 3") == 1);
}
