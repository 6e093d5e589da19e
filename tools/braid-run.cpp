// braid-run: starts the ranks of a job on this host, or on the hosts of --hosts through ssh, each with
// the variables a process group reads (BRAID_RANK, BRAID_WORLD_SIZE, BRAID_LOCAL_RANK,
// BRAID_LOCAL_WORLD_SIZE, BRAID_MASTER_ADDR, BRAID_MASTER_PORT, BRAID_RESTART), prefixes every line each
// rank prints with "[rank] ", and stops every rank when one fails; with --max-restarts it starts them all
// again, with --min-ranks without the rank that failed (elastic; docs/DISTRIBUTED.md).
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Rank {
  pid_t pid = -1;                  // the rank, or for a rank on another host the ssh that runs it
  int out = -1, err = -1;          // read ends of the rank's stdout and stderr
  int in = -1;                     // another host's rank: the write end of its ssh's stdin (closed: stop)
  std::string out_line, err_line;  // a line not yet ended
  bool running = false;
  int status = 0;  // wait status once ended
};

volatile sig_atomic_t g_signal = 0;  // SIGINT/SIGTERM to braid-run: passed on to every rank

// A port no one listens on now: bound to 0, read and closed. Another program could take it before
// rank 0 binds it; a fixed --master-port avoids even that.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

void write_prefixed(FILE* to, const std::string& label, const std::string& line, bool tag) {
  if (tag)
    std::fprintf(to, "[%s] %s\n", label.c_str(), line.c_str());
  else
    std::fprintf(to, "%s\n", line.c_str());
  std::fflush(to);
}

// Reads what is there on fd; writes each whole line prefixed. Returns false at end of file.
bool pump(int fd, std::string& pending, FILE* to, const std::string& label, bool tag) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) {
    if (!pending.empty()) write_prefixed(to, label, pending, tag);
    pending.clear();
    return false;
  }
  pending.append(buf, static_cast<size_t>(n));
  for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
    write_prefixed(to, label, pending.substr(0, nl), tag);
    pending.erase(0, nl + 1);
  }
  return true;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "ended";
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// A host of --hosts and the ranks it runs.
struct Host {
  std::string name;
  int slots = 1;
  bool local = false;  // this host: its ranks are started directly, not through ssh
};

struct Job {
  int ranks = 1;
  std::vector<Host> hosts;           // --hosts; empty: every rank on this host
  std::vector<std::string> agent;    // how another host runs a command: "ssh -o BatchMode=yes", --ssh
  std::vector<std::string> forward;  // NAME=VALUE for other hosts: braid-run's BRAID_* and -x variables
  int servers = 0;                   // KVStore server processes (braid-kvstore-server), after the ranks
  std::string server_program;        // braid-kvstore-server beside braid-run, or BRAID_KVSTORE_SERVER
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free one for each start
  bool tag = true;
  double grace_seconds = 5;
  // --rejoin: while the job runs with fewer than full_ranks, after rejoin_seconds braid-run creates
  // rejoin_file (BRAID_REJOIN_FILE of every rank) to ask for a stop at the next checkpoint.
  int full_ranks = 1;
  double rejoin_seconds = -1;  // < 0: no --rejoin
  std::string rejoin_file;
  std::vector<char*> command;
};

// Where process i runs: its host (nullptr: this host, no --hosts), its rank among that host's ranks,
// and how many ranks that host has. Ranks fill the hosts in order; servers run on the first host.
struct Placement {
  const Host* host = nullptr;
  int local_rank = 0, local_size = 0;
};

Placement place(const Job& job, int i) {
  if (job.hosts.empty()) return {nullptr, i < job.ranks ? i : 0, job.ranks};
  if (i >= job.ranks) return {&job.hosts[0], 0, std::min(job.hosts[0].slots, job.ranks)};
  int first = 0;
  for (const Host& h : job.hosts) {
    const int here = std::min(h.slots, job.ranks - first);
    if (i < first + here) return {&h, i - first, here};
    first += here;
  }
  return {&job.hosts.back(), 0, 1};  // not reached: -n is at most the slots
}

// 'text' for a POSIX shell, appended to line. (Appends, not operator+: GCC 12's -Wrestrict misfires on
// a literal + std::string.)
void append_quoted(std::string& line, const std::string& text) {
  line += '\'';
  for (char c : text)
    if (c == '\'')
      line += "'\\''";
    else
      line += c;
  line += '\'';
}

// The command another host's shell runs for a rank: in braid-run's folder, with the variables, the rank
// started in the background in a session of its own (setsid: its pid is its process group) and a
// watcher on the ssh connection's stdin, which braid-run closes to stop the rank and what it started
// (and which closes when braid-run dies): ssh passes no signal on to the remote command.
std::string remote_command(const std::vector<std::string>& env, const std::vector<std::string>& argv) {
  std::string line;
  char cwd[4096] = {};
  if (::getcwd(cwd, sizeof cwd)) {
    line += "cd ";
    append_quoted(line, cwd);
    line += " 2>/dev/null; ";
  }
  line += "exec env";
  for (const std::string& v : env) {
    line += ' ';
    append_quoted(line, v);
  }
  // An asynchronous list's stdin is /dev/null unless redirected: the watcher reads fd 3, ssh's stdin.
  line += " sh -c ";
  append_quoted(
      line,
      "exec 3<&0; setsid \"$@\" </dev/null 3<&- & p=$!; "
      "{ read -r _ || :; kill -s TERM -- \"-$p\" 2>/dev/null; } <&3 >/dev/null 2>&1 & exec 3<&-; wait \"$p\"");
  line += " braid-rank";
  for (const std::string& a : argv) {
    line += ' ';
    append_quoted(line, a);
  }
  return line;
}

// Process i of the job: rank i of the command, or for i >= job.ranks server i - job.ranks; on this host,
// or through the agent (ssh) on its host of --hosts.
pid_t start_rank(const Job& job, int i, int port, int kv_port, int restart, Rank& r) {
  const Placement at = place(job, i);
  const bool remote = at.host && !at.host->local;
  int out[2], err[2], in[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || (remote && ::pipe2(in, O_CLOEXEC) != 0)) {
    std::perror("braid-run: pipe");
    std::exit(1);
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    std::perror("braid-run: fork");
    std::exit(1);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // braid-run killed: its ranks go too
    ::setpgid(0, 0);                     // a process group of its own: stopping the rank stops what it started too
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    if (remote) ::dup2(in[0], 0);
    std::vector<std::string> remote_env = job.forward;  // another host's: what is set below, and forwarded
    auto set = [&](const char* name, const std::string& v) {
      ::setenv(name, v.c_str(), 1);
      remote_env.push_back(std::string(name) + "=" + v);
    };
    const bool server = i >= job.ranks;
    set("BRAID_WORLD_SIZE", std::to_string(job.ranks));
    set("BRAID_MASTER_ADDR", job.master_addr);
    set("BRAID_MASTER_PORT", std::to_string(port));
    set("BRAID_RESTART", std::to_string(restart));
    if (!job.rejoin_file.empty()) set("BRAID_REJOIN_FILE", job.rejoin_file);
    if (job.servers > 0) {
      set("BRAID_NUM_SERVERS", std::to_string(job.servers));
      set("BRAID_KVSTORE_PORT", std::to_string(kv_port));
      set("BRAID_ROLE", server ? "server" : "worker");
    }
    ::unsetenv("POSIXLY_CORRECT");
    std::vector<std::string> argv;
    if (server) {
      ::unsetenv("BRAID_RANK");
      set("BRAID_SERVER_RANK", std::to_string(i - job.ranks));
      argv = {job.server_program};
    } else {
      set("BRAID_RANK", std::to_string(i));
      set("BRAID_LOCAL_RANK", std::to_string(at.local_rank));
      set("BRAID_LOCAL_WORLD_SIZE", std::to_string(at.local_size));
      for (char* a : job.command)
        if (a) argv.emplace_back(a);
    }
    if (remote) {  // agent... HOST 'the remote command'
      std::vector<std::string> line = job.agent;
      line.push_back(at.host->name);
      line.push_back(remote_command(remote_env, argv));
      argv = std::move(line);
    }
    std::vector<char*> c_argv;
    for (std::string& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    ::execvp(c_argv[0], c_argv.data());
    std::fprintf(stderr, "braid-run: cannot run '%s': %s\n", c_argv[0], std::strerror(errno));
    ::_exit(127);
  }
  (void)::setpgid(pid, pid);  // also here, so that a stop right after the fork finds the group
  ::close(out[1]);
  ::close(err[1]);
  if (remote) ::close(in[0]);
  r = Rank{};
  r.pid = pid;
  r.out = out[0];
  r.err = err[0];
  r.in = in[1];
  r.running = true;
  return pid;
}

// Runs the job once. Returns 0 when every rank exited 0, else the first failed rank's exit code.
// A process's label in the output and in messages: "3" for rank 3, "s0" for server 0.
std::string label_of(const Job& job, size_t i) {
  const int n = static_cast<int>(i);
  char label[16];
  std::snprintf(label, sizeof label, n < job.ranks ? "%d" : "s%d", n < job.ranks ? n : n - job.ranks);
  return label;
}

// run_once's result when every rank stopped with BRAID_EXIT_REJOIN after braid-run asked them to.
constexpr int kRejoin = -1;
constexpr int kExitRejoin = 75;  // BRAID_EXIT_REJOIN (braid.h)

// *worker_failed tells whether the first failure was a rank's (not a server's).
int run_once(const Job& job, int restart, bool* worker_failed) {
  const int port = job.master_port ? job.master_port : free_port();
  int kv_port = job.master_port ? job.master_port + 1 : free_port();
  while (job.servers > 0 && !job.master_port && kv_port == port) kv_port = free_port();
  // Once every rank has succeeded, the servers are given --grace seconds to see their workers' goodbyes
  // and end, then stopped: a server left waiting is not a failure of the job.
  std::chrono::steady_clock::time_point servers_stop_at{};
  int first_failure = 0;
  bool stopping = false;
  // --rejoin: when to ask a job running short of ranks to stop at its next checkpoint for them.
  const bool short_of_ranks = job.rejoin_seconds >= 0 && job.ranks < job.full_ranks;
  const auto rejoin_at = std::chrono::steady_clock::now() +
                         std::chrono::milliseconds(static_cast<int64_t>(std::max(job.rejoin_seconds, 0.0) * 1000));
  bool rejoin_asked = false;
  int rejoin_exits = 0;
  auto ask_rejoin = [&] {
    if (!short_of_ranks || rejoin_asked || std::chrono::steady_clock::now() < rejoin_at) return;
    rejoin_asked = true;  // once, whether or not the file can be made
    if (FILE* f = std::fopen(job.rejoin_file.c_str(), "w")) {
      std::fclose(f);
      std::fprintf(stderr, "braid-run: %d lost rank(s) ready to rejoin at the job's next checkpoint\n",
                   job.full_ranks - job.ranks);
    } else {
      std::fprintf(stderr, "braid-run: --rejoin: cannot create %s: %s\n", job.rejoin_file.c_str(),
                   std::strerror(errno));
    }
  };
  ask_rejoin();  // --rejoin 0: before the ranks start, so that their first check sees it
  std::vector<Rank> ranks(static_cast<size_t>(job.ranks + job.servers));
  for (size_t i = 0; i < ranks.size(); ++i) start_rank(job, static_cast<int>(i), port, kv_port, restart, ranks[i]);
  std::chrono::steady_clock::time_point kill_at{};
  auto stop = [](Rank& r, int sig) {
    if (r.in >= 0) {  // another host's rank: its watcher sends it SIGTERM when its stdin closes
      ::close(r.in);
      r.in = -1;
    }
    if (r.running) ::kill(-r.pid, sig);  // the rank's process group: a shell's children too
  };
  auto stop_all = [&](int sig) {
    for (Rank& r : ranks) stop(r, sig);
  };
  std::chrono::steady_clock::time_point all_ended{};
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> who;  // rank, is stderr
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (ranks[i].out >= 0) fds.push_back({ranks[i].out, POLLIN, 0}), who.emplace_back(i, false);
      if (ranks[i].err >= 0) fds.push_back({ranks[i].err, POLLIN, 0}), who.emplace_back(i, true);
    }
    (void)::poll(fds.data(), fds.size(), 100);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      Rank& r = ranks[who[k].first];
      int& fd = who[k].second ? r.err : r.out;
      if (!pump(fd, who[k].second ? r.err_line : r.out_line, who[k].second ? stderr : stdout,
                label_of(job, who[k].first), job.tag)) {
        ::close(fd);
        fd = -1;
      }
    }
    // Ranks that ended.
    for (size_t i = 0; i < ranks.size(); ++i) {
      Rank& r = ranks[i];
      if (!r.running) continue;
      int status = 0;
      if (::waitpid(r.pid, &status, WNOHANG) != r.pid) continue;
      r.running = false;
      r.status = status;
      if (r.in >= 0) {  // its ssh has ended: nothing is left to stop there
        ::close(r.in);
        r.in = -1;
      }
      // Once every rank has succeeded, a server's exit does not fail the job: it may have been stopped
      // after the grace, or have seen a rank leave without releasing its store.
      bool ranks_succeeded = true;
      for (int w = 0; w < job.ranks; ++w) {
        const Rank& x = ranks[static_cast<size_t>(w)];
        ranks_succeeded = ranks_succeeded && !x.running && exit_code(x.status) == 0;
      }
      const bool server_after_success = static_cast<int>(i) >= job.ranks && ranks_succeeded;
      // A rank stopping for the lost ranks to rejoin, as asked: not a failure (the others follow).
      const bool rejoining = rejoin_asked && static_cast<int>(i) < job.ranks && exit_code(status) == kExitRejoin;
      if (rejoining && ++rejoin_exits == 1)
        std::fprintf(stderr, "braid-run: rank %s stopped at its checkpoint for the lost ranks to rejoin\n",
                     label_of(job, i).c_str());
      if (exit_code(status) != 0 && !rejoining && !stopping && !server_after_success) {
        *worker_failed = static_cast<int>(i) < job.ranks;
        first_failure = exit_code(status);
        std::fprintf(stderr, "braid-run: %s %s %s; stopping the other ranks\n",
                     static_cast<int>(i) < job.ranks ? "rank" : "server", label_of(job, i).c_str(),
                     describe_status(status).c_str());
        stopping = true;
        stop_all(SIGTERM);
        kill_at = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(job.grace_seconds * 1000));
      }
    }
    if (g_signal && !stopping) {
      std::fprintf(stderr, "braid-run: %s; stopping every rank\n", strsignal(g_signal));
      first_failure = 128 + g_signal;
      stopping = true;
      stop_all(g_signal);
      kill_at =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(job.grace_seconds * 1000));
    }
    if (stopping && std::chrono::steady_clock::now() >= kill_at) stop_all(SIGKILL);
    if (!stopping) ask_rejoin();
    if (!stopping && job.servers > 0) {
      bool workers_running = false;
      for (int i = 0; i < job.ranks; ++i) workers_running = workers_running || ranks[static_cast<size_t>(i)].running;
      const auto now = std::chrono::steady_clock::now();
      if (!workers_running && servers_stop_at == decltype(servers_stop_at){})
        servers_stop_at = now + std::chrono::milliseconds(static_cast<int64_t>(job.grace_seconds * 1000));
      if (!workers_running && now >= servers_stop_at)
        for (size_t i = static_cast<size_t>(job.ranks); i < ranks.size(); ++i) stop(ranks[i], SIGKILL);
    }
    // Done when every rank has ended and its output is read; a process a rank left behind that keeps
    // the rank's output open is given a second, then let go.
    bool running = false, open = false;
    for (const Rank& r : ranks) {
      running = running || r.running;
      open = open || r.out >= 0 || r.err >= 0;
    }
    if (!running && all_ended == std::chrono::steady_clock::time_point{}) all_ended = std::chrono::steady_clock::now();
    if (!running && (!open || std::chrono::steady_clock::now() - all_ended > std::chrono::seconds(1))) break;
  }
  for (Rank& r : ranks) {
    if (r.out >= 0) ::close(r.out);
    if (r.err >= 0) ::close(r.err);
    if (r.in >= 0) ::close(r.in);
  }
  if (rejoin_asked) (void)::unlink(job.rejoin_file.c_str());
  if (first_failure == 0 && rejoin_exits > 0) {
    if (rejoin_exits == job.ranks) return kRejoin;
    std::fprintf(stderr, "braid-run: %d of the %d ranks stopped for the lost ranks to rejoin, the others ended\n",
                 rejoin_exits, job.ranks);
    return kExitRejoin;  // the ranks did not agree: a failure
  }
  return first_failure;
}

// Words of a command line given as one string ("ssh -p 2222"): split at spaces, no quoting.
std::vector<std::string> command_words(const std::string& text) {
  std::vector<std::string> words;
  size_t at = 0;
  while ((at = text.find_first_not_of(' ', at)) != std::string::npos) {
    const size_t end = text.find(' ', at);
    words.push_back(text.substr(at, end == std::string::npos ? std::string::npos : end - at));
    at = end;
  }
  return words;
}

// --hosts H1:N1,H2,...: each host's name and ranks (1 without ":N"); this host is named localhost,
// 127.0.0.1 or by its hostname.
std::vector<Host> parse_hosts(const cli_parser& cli) {
  char self[256] = {};
  (void)::gethostname(self, sizeof self - 1);
  std::vector<Host> hosts;
  for (const std::string& item : cli_list(cli, cli.value)) {
    Host h;
    const size_t colon = item.rfind(':');
    h.name = item.substr(0, colon);
    if (colon != std::string::npos) {
      char* end = nullptr;
      const long n = std::strtol(item.c_str() + colon + 1, &end, 10);
      if (end == item.c_str() + colon + 1 || *end != '\0' || n < 1 || n > 4096)
        cli_fail(&cli, "--hosts: '%s' is not HOST:N with N in [1, 4096]", item.c_str());
      h.slots = static_cast<int>(n);
    }
    if (h.name.empty()) cli_fail(&cli, "--hosts: '%s' has no host name", item.c_str());
    h.local = h.name == "localhost" || h.name == "127.0.0.1" || h.name == self;
    hosts.push_back(std::move(h));
  }
  return hosts;
}

}  // namespace

int main(int argc, char** argv) {
  enum {
    OPT_NPROC = 'n',
    OPT_MASTER_ADDR = CLI_FIRST,
    OPT_MASTER_PORT,
    OPT_MAX_RESTARTS,
    OPT_NO_TAG,
    OPT_GRACE,
    OPT_SERVERS,
    OPT_MIN_RANKS,
    OPT_HOSTS,
    OPT_SSH,
    OPT_REJOIN,
    OPT_EXPORT = 'x'
  };
  static const struct option options[] = {{"nproc", required_argument, nullptr, OPT_NPROC},
                                          {"master-addr", required_argument, nullptr, OPT_MASTER_ADDR},
                                          {"master-port", required_argument, nullptr, OPT_MASTER_PORT},
                                          {"max-restarts", required_argument, nullptr, OPT_MAX_RESTARTS},
                                          {"no-tag", no_argument, nullptr, OPT_NO_TAG},
                                          {"grace", required_argument, nullptr, OPT_GRACE},
                                          {"servers", required_argument, nullptr, OPT_SERVERS},
                                          {"min-ranks", required_argument, nullptr, OPT_MIN_RANKS},
                                          {"hosts", required_argument, nullptr, OPT_HOSTS},
                                          {"ssh", required_argument, nullptr, OPT_SSH},
                                          {"rejoin", required_argument, nullptr, OPT_REJOIN},
                                          CLI_STANDARD_OPTIONS,
                                          {nullptr, 0, nullptr, 0}};
  cli_parser cli = cli_parser_init(
      "braid-run",
      "usage: braid-run -n N [--hosts H1:N1,H2:N2...] [--ssh CMD] [-x NAME[=VALUE]]... [--servers S]\n"
      "                 [--master-addr A] [--master-port P] [--max-restarts K] [--min-ranks M [--rejoin S]]\n"
      "                 [--grace S] [--no-tag] COMMAND [ARGS...]\n",
      "Starts N ranks of COMMAND on this host, each with BRAID_RANK, BRAID_WORLD_SIZE, BRAID_LOCAL_RANK,\n"
      "BRAID_LOCAL_WORLD_SIZE, BRAID_MASTER_ADDR, BRAID_MASTER_PORT and BRAID_RESTART set, and prefixes each\n"
      "line a rank prints with \"[RANK] \" (--no-tag: not). When a rank fails, the others get SIGTERM, then\n"
      "SIGKILL after --grace seconds (default 5); with --max-restarts K the whole job starts again, up to K\n"
      "times, with BRAID_RESTART counting the restarts (resume from your last checkpoint); with --min-ranks M\n"
      "(elastic) the rank that failed is left out of the restarted job while at least M ranks remain, and\n"
      "the others start again with the smaller BRAID_WORLD_SIZE (re-split your data); with --rejoin S, S seconds\n"
      "later braid-run asks the job (braid_process_group_rejoin_pending) to stop at its next checkpoint with\n"
      "status 75 (BRAID_EXIT_REJOIN) and starts it again with every rank (not counted as a restart). The exit\n"
      "status is the first failed rank's (128 + signal for a signal), 0 when every rank succeeded. Without\n"
      "--master-port, each start takes a free port. --servers S also starts S KVStore servers\n"
      "(braid-kvstore-server, output tagged \"[sI]\") for the ranks' dist_sync / dist_async stores, and sets\n"
      "BRAID_NUM_SERVERS and BRAID_KVSTORE_PORT; once every rank has succeeded they get --grace seconds to end.\n"
      "--hosts H1:N1,H2:N2 places N1 ranks on H1, then N2 on H2 (-n, if given, at most their sum; the servers\n"
      "on H1); a host other than this one (localhost, 127.0.0.1 or its hostname) runs its ranks through\n"
      "--ssh (default: $BRAID_RUN_SSH, else \"ssh -o BatchMode=yes\"), in this folder, with the variables above,\n"
      "braid-run's BRAID_* variables and those of -x. The master address is then H1 (this host's name when H1\n"
      "is this host) unless --master-addr says otherwise. See docs/DISTRIBUTED.md.\n",
      options);
  cli.short_options = "+n:x:";  // the command's own options are its own
  Job job;
  int max_restarts = 0, min_ranks = 0;
  bool have_n = false, have_addr = false;
  std::vector<std::string> exports;  // -x
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case OPT_NPROC:
        job.ranks = static_cast<int>(cli_int(&cli, 1, 4096));
        have_n = true;
        break;
      case OPT_MASTER_ADDR:
        job.master_addr = cli.value;
        have_addr = true;
        break;
      case OPT_HOSTS: job.hosts = parse_hosts(cli); break;
      case OPT_SSH: job.agent = command_words(cli.value); break;
      case OPT_EXPORT: exports.emplace_back(cli.value); break;
      case OPT_REJOIN: job.rejoin_seconds = cli_real(&cli, 1); break;
      case OPT_MASTER_PORT: job.master_port = static_cast<int>(cli_int(&cli, 1, 65535)); break;
      case OPT_MAX_RESTARTS: max_restarts = static_cast<int>(cli_int(&cli, 0, 1000000)); break;
      case OPT_NO_TAG: job.tag = false; break;
      case OPT_GRACE: job.grace_seconds = cli_real(&cli, 1); break;
      case OPT_SERVERS: job.servers = static_cast<int>(cli_int(&cli, 0, 4096)); break;
      case OPT_MIN_RANKS: min_ranks = static_cast<int>(cli_int(&cli, 1, 4096)); break;
      default: break;
    }
  }
  int slots = 0;
  for (const Host& h : job.hosts) slots += h.slots;
  if (!job.hosts.empty()) {
    if (!have_n) job.ranks = slots;
    if (job.ranks > slots) cli_fail(&cli, "-n %d is more than the %d slots of --hosts", job.ranks, slots);
    have_n = true;
  }
  if (!have_n) cli_fail(&cli, "-n N (the number of ranks) is required");
  bool any_remote = false;
  for (const Host& h : job.hosts) any_remote = any_remote || !h.local;
  if (any_remote) {
    if (job.agent.empty()) {
      const char* agent = std::getenv("BRAID_RUN_SSH");
      job.agent = command_words(agent && *agent ? agent : "ssh -o BatchMode=yes");
    }
    if (!have_addr) {  // an address every host reaches: the first host's name
      char self[256] = {};
      job.master_addr = !job.hosts[0].local                         ? job.hosts[0].name
                        : ::gethostname(self, sizeof self - 1) == 0 ? std::string(self)
                                                                    : job.hosts[0].name;
    }
    // A free port here says nothing of another host's: torchrun's default there.
    if (job.master_port == 0 && !job.hosts[0].local) job.master_port = 29500;
    // Other hosts get braid-run's BRAID_* settings (the ranks' own variables are set for each) and -x's.
    for (char** e = environ; *e; ++e) {
      const std::string v = *e;
      const std::string name = v.substr(0, v.find('='));
      if (name.rfind("BRAID_", 0) == 0 && name != "BRAID_RANK" && name != "BRAID_SERVER_RANK") job.forward.push_back(v);
    }
    for (const std::string& x : exports) {
      if (x.find('=') != std::string::npos) {
        job.forward.push_back(x);
      } else if (const char* v = std::getenv(x.c_str())) {
        job.forward.push_back(x + "=" + v);
      }
    }
  }
  if (min_ranks > job.ranks) cli_fail(&cli, "--min-ranks %d is more than the %d ranks of -n", min_ranks, job.ranks);
  if (job.rejoin_seconds >= 0 && min_ranks == 0) cli_fail(&cli, "--rejoin needs --min-ranks (an elastic job)");
  if (optind >= argc) cli_fail(&cli, "no command to run");
  for (int i = optind; i < argc; ++i) job.command.push_back(argv[i]);
  if (job.servers > 0) {
    if (const char* p = std::getenv("BRAID_KVSTORE_SERVER"); p && *p) {
      job.server_program = p;
    } else {
      char self[4096] = {};
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
      dir = dir.substr(0, dir.rfind('/') + 1);
      job.server_program = dir + "braid-kvstore-server";
    }
    if (::access(job.server_program.c_str(), X_OK) != 0)
      cli_fail(&cli, "--servers: cannot run %s (build the braid-kvstore-server tool, or set BRAID_KVSTORE_SERVER)",
               job.server_program.c_str());
  }
  job.command.push_back(nullptr);

  struct sigaction sa {};
  sa.sa_handler = [](int sig) { g_signal = sig; };
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  job.full_ranks = job.ranks;
  std::string rejoin_dir;
  if (job.rejoin_seconds >= 0) {
    // Where rank 0 looks for the file: /tmp here; in this folder (a shared file system, as --hosts
    // assumes) when rank 0 runs on another host.
    std::string pattern = !job.hosts.empty() && !job.hosts[0].local ? ".braid-run-XXXXXX" : "/tmp/braid-run-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("braid-run: --rejoin: mkdtemp");
      return 1;
    }
    rejoin_dir = pattern;
    char full[4096] = {};
    job.rejoin_file = (::realpath(rejoin_dir.c_str(), full) ? std::string(full) : rejoin_dir) + "/rejoin";
  }
  int failures = 0;  // restarts after a failure (--max-restarts); rejoining is not one
  int code = 0;
  for (int restart = 0;; ++restart) {
    bool worker_failed = false;
    code = run_once(job, restart, &worker_failed);
    if (code == 0) break;
    if (code == kRejoin) {
      std::fprintf(stderr, "braid-run: restarting with %d ranks: %d rejoin from the checkpoint\n", job.full_ranks,
                   job.full_ranks - job.ranks);
      job.ranks = job.full_ranks;
      continue;
    }
    if (g_signal || failures >= max_restarts) break;
    ++failures;
    // Elastic: the failed rank is taken as lost, and the survivors go on without it while enough remain.
    if (min_ranks > 0 && worker_failed && job.ranks - 1 >= min_ranks) {
      --job.ranks;
      std::fprintf(stderr, "braid-run: continuing with %d ranks (--min-ranks %d; restart %d of %d)\n", job.ranks,
                   min_ranks, failures, max_restarts);
      continue;
    }
    std::fprintf(stderr, "braid-run: restarting every rank (restart %d of %d)\n", failures, max_restarts);
  }
  if (!rejoin_dir.empty()) (void)::rmdir(rejoin_dir.c_str());
  return code;
}
