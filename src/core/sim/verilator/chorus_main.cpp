// CHORUS simulation main for Verilator 5.x (used instead of --main/--binary, whose stock main in
// 5.006 never writes coverage). Responsibilities, each learned the hard way:
//  - The host learns everything it scores from ONE report, written by this harness to fd 3 (a
//    socket the host opened; no name in the jail's file system, which has no /proc) after the
//    last line of testbench code has run: after final() on a normal end (with the counts taken
//    into the harness's memory just before final(): after it a DUT library's counts are garbage
//    on current releases), or from the fatal, signal and out-of-memory paths, after which the
//    process _exit()s without running anything else. The report carries the coverage database, how the run ended, Verilator's own fatal
//    errors and every $error/$fatal/assertion site with its count and the times of its first and
//    last failure (`unique`/`priority` case and if violations included: on 5.006 and current
//    releases alike Verilator compiles them to the same VL_STOP_MT call as an assertion's $error). It is framed by a nonce the
//    host passes on stdin, read before any testbench code runs (stdin is then /dev/null): a
//    testbench that reaches fd 3 anyway cannot write a frame the host accepts, and any byte it
//    adds makes the frame invalid. A coverage.dat the testbench writes is just its own file.
//  - $fatal/$stop end the process through vl_fatal (defined here, VL_USER_FATAL): report, then
//    exit 134 on every version (5.006 abort()s, current releases exit(1));
//  - a wall-clock timeout arrives as SIGTERM/SIGXCPU: the handler reports, then exits 124;
//  - +chorus+maxtime_ns+<N> bounds simulated time (nanoseconds, converted to the model's time
//    precision): exit 125;
//  - "no events left" without $finish is a stuck testbench: exit 3, but only if $finish was not
//    called (a testbench that finishes cleanly must not be misread as stuck).
//  - out of memory (the address-space limit): reported as such, exit 120 (a std::bad_alloc must
//    not read as $fatal);
//  - $error does not stop the run (commercial simulator behaviour) but $fatal and $stop do.
//    Verilator 5.006 compiles all three to the same VL_STOP_MT(file, line) call, so the engine
//    passes the source positions of $fatal/$stop as +chorus+stops+<file:line;...> and our
//    vl_stop_maybe (the runtime is built with VL_USER_STOP_MAYBE) tells them apart.
#include "verilated.h"
#include "verilated_cov.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

// The model is reached through chorus_model.cpp, compiled with each candidate, so this main is
// compiled once per machine (with the runtime) instead of once per candidate. C names: a group's
// member links its own suffixed copies under these names (stages/sharedBuild.ts).
extern "C" {
void* chorus_model_new(VerilatedContext* contextp);
void chorus_model_eval(void* modelp);
bool chorus_model_events_pending(void* modelp);
uint64_t chorus_model_next_time_slot(void* modelp);
void chorus_model_final(void* modelp);
void chorus_model_delete(void* modelp);
}

namespace {
constexpr int REPORT_FD = 3;
constexpr size_t MAX_SITES = 4096;

VerilatedContext* g_contextp = nullptr;
bool g_channel = false;  // fd 3 was open at start: the host reads a report
std::string g_nonce;
std::string g_handCovPath;  // +chorus+cov+<path>: only without a host channel
std::atomic<long> g_ender{0};  // the thread (kernel tid) that ends the run; 0 until one does
const char* g_end = "running";
char* g_reserve = nullptr;  // released on out-of-memory, so the report can still be written

struct Fatal {
    std::string file;
    int line;
    std::string msg;
};
std::vector<Fatal> g_fatals;

struct Site {
    uint64_t count = 0;
    uint64_t first = 0;
    uint64_t last = 0;
    bool stops = false;  // a $fatal/$stop (the run ended here)
};
std::map<std::pair<std::string, int>, Site> g_sites;
uint64_t g_sitesDropped = 0;

std::string hex(const std::string& s) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() * 2);
    for (unsigned char c : s) {
        out.push_back(digits[c >> 4]);
        out.push_back(digits[c & 15]);
    }
    return out.empty() ? "-" : out;
}

bool writeAll(int fd, const char* data, size_t len) {
    while (len > 0) {
        const ssize_t n = ::write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            return false;
        }
        data += n;
        len -= static_cast<size_t>(n);
    }
    return true;
}

// The coverage database as bytes: written by Verilator to a directory made now (after the last
// testbench code, under a random name nothing could have prepared), read back, removed.
bool coverageBytes(std::string& out, std::string& problem) {
    char dir[] = "chorus-report-XXXXXX";
    if (!::mkdtemp(dir)) {
        problem = std::string("cannot create the report directory: ") + std::strerror(errno);
        return false;
    }
    const std::string path = std::string(dir) + "/coverage.dat";
    g_contextp->coveragep()->write(path.c_str());
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    bool ok = fd >= 0;
    if (!ok) problem = std::string("the coverage database was not written: ") + std::strerror(errno);
    char buf[65536];
    while (ok) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            problem = std::string("cannot read the coverage database back: ") + std::strerror(errno);
            ok = false;
        }
        if (n <= 0) break;
        out.append(buf, static_cast<size_t>(n));
    }
    if (fd >= 0) ::close(fd);
    if (ok && out.empty()) {
        problem = "the coverage database is empty (the run directory is full?)";
        ok = false;
    }
    ::unlink(path.c_str());
    ::rmdir(dir);
    return ok;
}

// The counts as they stand before final(): after it, a DUT library's counts are garbage on
// current releases. Taken into the harness's memory, out of the testbench's reach.
std::string g_snapshot;
std::string g_snapshotProblem;
bool g_snapshotTaken = false;

void snapshotCoverage() {
    if (!g_channel) return;
    coverageBytes(g_snapshot, g_snapshotProblem);
    g_snapshotTaken = true;
}

// Once, from endWith on the one thread that ends the run. Not async-signal-safe in theory; from a
// signal handler we exit right after. Current releases run a second thread beside the model's,
// so a signal may land on either.
void writeReport() {
    std::fflush(nullptr);
    if (g_contextp == nullptr) return;
    if (!g_channel) {
        // Run by hand (no host on fd 3): +chorus+cov+<path> names where the counts go, as a
        // plain Verilator main would write them. The engine never reads such a file.
        if (!g_handCovPath.empty()) g_contextp->coveragep()->write(g_handCovPath.c_str());
        return;
    }
    std::string head = "CHORUS-REPORT 2 " + g_nonce + "\n";
    head += std::string("end ") + g_end + "\n";
    head += std::string("finished ") + (g_contextp->gotFinish() ? "1" : "0") + "\n";
    head += "time " + std::to_string(g_contextp->time()) + "\n";
    head += "precision " + std::to_string(g_contextp->timeprecision()) + "\n";
    for (const Fatal& f : g_fatals)
        head += "fatal " + hex(f.file) + " " + std::to_string(f.line) + " " + hex(f.msg) + "\n";
    for (const auto& it : g_sites)
        head += "site " + hex(it.first.first) + " " + std::to_string(it.first.second) + " "
                + std::to_string(it.second.count) + " " + std::to_string(it.second.first) + " "
                + std::to_string(it.second.last) + " " + (it.second.stops ? "1" : "0") + "\n";
    if (g_sitesDropped) head += "sites-dropped " + std::to_string(g_sitesDropped) + "\n";
    std::string cov = g_snapshot;
    std::string problem = g_snapshotProblem;
    if (g_snapshotTaken ? !cov.empty() : coverageBytes(cov, problem)) {
        head += "coverage " + std::to_string(cov.size()) + "\n";
    } else {
        head += "coverage-error " + hex(problem) + "\n";
        cov.clear();
    }
    const std::string tail = "\nCHORUS-END " + g_nonce + "\n";
    writeAll(REPORT_FD, head.data(), head.size());
    writeAll(REPORT_FD, cov.data(), cov.size());
    writeAll(REPORT_FD, tail.data(), tail.size());
    ::close(REPORT_FD);
}

long threadId() { return static_cast<long>(::syscall(SYS_gettid)); }

// One thread ends the run. A second one (a signal is delivered to any thread of the process, and
// `timeout` sends SIGTERM twice: to the child and to its group) must not _exit while the first is
// writing the report: that cut the report, and a timed-out run lost its coverage. It waits
// instead; the first one's _exit ends it too.
[[noreturn]] void endWith(const char* how, int code) {
    const long me = threadId();
    long owner = 0;
    if (!g_ender.compare_exchange_strong(owner, me)) {
        if (owner != me)
            for (;;) ::pause();
        _exit(code);  // this thread again (a fatal while it reports): the report is what it wrote
    }
    g_end = how;
    writeReport();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(code);
}

// Exit callbacks: Verilator runs them on a second $finish (then exit(0)) and from internal paths.
// Ending already on this thread: nothing to add; on another thread, endWith waits for its exit.
void onExit(void*) {
    if (g_ender.load() == threadId()) return;
    endWith(g_contextp && g_contextp->gotFinish() ? "finish" : "exit", 0);
}

void onSignal(int sig) {
    // The run is ending already: on this thread (the signal interrupted its report), let it go
    // on; on another, wait for its exit.
    const long owner = g_ender.load();
    if (owner == threadId()) return;
    if (owner != 0)
        for (;;) ::pause();
    std::fflush(stdout);
    std::fprintf(stderr, "%%Error: chorus: simulation stopped by signal %d (wall-clock limit)\n", sig);
    endWith("signal", 124);
}

void onOutOfMemory() {
    delete[] g_reserve;
    g_reserve = nullptr;
    std::set_new_handler(nullptr);
    std::fprintf(stderr, "%%Error: chorus: the simulation ran out of memory (address-space limit)\n");
    endWith("oom", 120);
}

void onTerminate() {
    std::fprintf(stderr, "%%Error: chorus: the simulation ended with an unhandled C++ exception\n");
    endWith("terminate", 134);
}

std::set<std::string> g_stops;  // "basename:line" of $fatal/$stop statements

std::string baseName(const char* path) {
    const char* slash = std::strrchr(path, '/');
    return std::string(slash ? slash + 1 : path);
}

std::string plusArg(VerilatedContext* ctx, const char* prefix) {
    const char* m = ctx->commandArgsPlusMatch(prefix);
    if (m == nullptr || m[0] == '\0') return "";
    return std::string(m + std::strlen(prefix) + 1);  // skip the leading '+'
}

// Before any testbench code: fd 3 open means the host waits for a report; its nonce is the first
// line of stdin. stdin is then /dev/null, so the testbench cannot read what is left of it.
void openChannel() {
    if (::fcntl(REPORT_FD, F_GETFD) < 0) return;
    ::fcntl(REPORT_FD, F_SETFD, FD_CLOEXEC);
    char c;
    while (g_nonce.size() < 128) {
        const ssize_t n = ::read(0, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || c == '\n') break;
        g_nonce.push_back(c);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) {
        ::dup2(null, 0);
        if (null != 0) ::close(null);
    } else {
        ::close(0);
    }
    g_channel = !g_nonce.empty();
}

void recordSite(const char* filename, int linenum, bool stops) {
    const auto key = std::make_pair(std::string(filename ? filename : ""), linenum);
    auto it = g_sites.find(key);
    if (it == g_sites.end()) {
        if (g_sites.size() >= MAX_SITES) {
            ++g_sitesDropped;
            return;
        }
        it = g_sites.emplace(key, Site{}).first;
        it->second.first = g_contextp ? g_contextp->time() : 0;
    }
    ++it->second.count;
    it->second.last = g_contextp ? g_contextp->time() : 0;
    it->second.stops = it->second.stops || stops;
}
}  // namespace

// Called for $error/$fatal/$stop (and assertion failures): see the header comment.
void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe) {
    Verilated::threadContextp()->errorCountInc();
    const std::string key = baseName(filename ? filename : "") + ":" + std::to_string(linenum);
    const bool stops = !maybe || g_stops.count(key);
    recordSite(filename, linenum, stops);
    if (stops) vl_stop(filename, linenum, hier);  // -> vl_fatal below
}

// Verilator's fatal errors ($stop/$fatal through vl_stop, "did not converge", out-of-bounds...):
// printed as Verilator prints them, recorded in the report (the host tells the runtime's own
// errors from the testbench's output by this record, never by text in the log), then the end.
void vl_fatal(const char* filename, int linenum, const char* hier, const char* msg) {
    (void)hier;
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    const char* text = msg ? msg : "";
    // "CODE: text" is printed as %Error-CODE (current releases' convention).
    const char* rest = text;
    while (*rest >= 'A' && *rest <= 'Z') ++rest;
    std::string prefix = "%Error";
    if (rest != text && rest[0] == ':' && rest[1] == ' ') {
        prefix += "-" + std::string(text, static_cast<size_t>(rest - text));
        text = rest + 2;
    }
    if (filename && filename[0])
        VL_PRINTF("%s: %s:%d: %s\n", prefix.c_str(), filename, linenum, text);
    else
        VL_PRINTF("%s: %s\n", prefix.c_str(), text);
    if (g_fatals.size() < 16) g_fatals.push_back({filename ? filename : "", linenum, msg ? msg : ""});
    endWith(std::strcmp(text, "Verilog $stop") == 0 ? "stop" : "fatal", 134);
}

int main(int argc, char** argv) {
    openChannel();
    g_reserve = new char[16 << 20];
    std::set_new_handler(onOutOfMemory);
    std::set_terminate(onTerminate);
    const std::unique_ptr<VerilatedContext> contextp{new VerilatedContext};
    g_contextp = contextp.get();
    contextp->commandArgs(argc, argv);
    contextp->errorLimit(1000000);
    if (!g_channel) g_handCovPath = plusArg(contextp.get(), "chorus+cov+");
    {
        const std::string stops = plusArg(contextp.get(), "chorus+stops+");
        size_t start = 0;
        while (start < stops.size()) {
            size_t end = stops.find(';', start);
            if (end == std::string::npos) end = stops.size();
            if (end > start) g_stops.insert(stops.substr(start, end - start));
            start = end + 1;
        }
    }
    Verilated::addExitCb(onExit, nullptr);
    std::signal(SIGTERM, onSignal);
    std::signal(SIGXCPU, onSignal);
    std::signal(SIGINT, onSignal);

    void* const topp = chorus_model_new(contextp.get());
    // The model's constructor sets the time precision: convert the limit only after it.
    const std::string maxTimeArg = plusArg(contextp.get(), "chorus+maxtime_ns+");
    uint64_t maxTime = 0;
    if (!maxTimeArg.empty()) {
        // Precision is a power of ten in seconds (-12 = 1ps): units per ns = 10^(-9 - precision).
        double units = std::strtod(maxTimeArg.c_str(), nullptr);
        for (int p = contextp->timeprecision(); p < -9; ++p) units *= 10.0;
        for (int p = contextp->timeprecision(); p > -9; --p) units /= 10.0;
        maxTime = units < 1.0 ? 1 : static_cast<uint64_t>(units);
    }

    int rc = 0;
    while (!contextp->gotFinish()) {
        chorus_model_eval(topp);
        if (contextp->gotFinish()) break;
        if (!chorus_model_events_pending(topp)) {
            std::fprintf(stderr,
                         "%%Error: chorus: simulation ran out of events at time %llu without "
                         "$finish (the testbench never calls $finish, or waits on an event that "
                         "never comes)\n",
                         static_cast<unsigned long long>(contextp->time()));
            rc = 3;
            break;
        }
        const uint64_t next = chorus_model_next_time_slot(topp);
        if (maxTime != 0 && next > maxTime) {
            std::fprintf(stderr,
                         "%%Error: chorus: simulated-time limit reached at time %llu (limit %llu) "
                         "without $finish\n",
                         static_cast<unsigned long long>(contextp->time()),
                         static_cast<unsigned long long>(maxTime));
            rc = 125;
            break;
        }
        contextp->time(next);
    }
    // Skip final() when stuck: a stuck model's final blocks add nothing and may hang.
    if (rc == 3) endWith("no-events", 3);
    if (rc == 125) endWith("maxtime", 125);
    snapshotCoverage();
    chorus_model_final(topp);
    // The last testbench code has run: only the harness acts from here on (no destructors, no
    // exit handlers: _exit).
    endWith("finish", contextp->gotError() ? 1 : 0);
}
