// CHORUS simulation main for Verilator 5.x (used instead of --main/--binary, whose stock main in
// 5.006 never writes coverage). Responsibilities, each learned the hard way:
//  - coverage goes to the path given by +chorus+cov+<path>, and it is written exactly once,
//    BEFORE final() (after final(), counts from hierarchical blocks are garbage);
//  - $fatal/$stop end the process through vl_fatal (5.006 abort()s, current releases exit(1)):
//    an exit callback writes coverage first, then exits 134 on every version;
//  - a wall-clock timeout arrives as SIGTERM/SIGXCPU: the handler writes coverage, then exits 124;
//  - +chorus+maxtime_ns+<N> bounds simulated time (nanoseconds, converted to the model's time
//    precision): exit 125;
//  - "no events left" without $finish is a stuck testbench: exit 3, but only if $finish was not
//    called (a testbench that finishes cleanly must not be misread as stuck).
//  - $error does not stop the run (commercial simulator behaviour) but $fatal and $stop do.
//    Verilator 5.006 compiles all three to the same VL_STOP_MT(file, line) call, so the engine
//    passes the source positions of $fatal/$stop as +chorus+stops+<file:line;...> and our
//    vl_stop_maybe (the runtime is built with VL_USER_STOP_MAYBE) tells them apart.
#include "verilated.h"
#include "verilated_cov.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <unistd.h>

// The model is reached through chorus_model.cpp, compiled with each candidate, so this main is
// compiled once per machine (with the runtime) instead of once per candidate.
void* chorus_model_new(VerilatedContext* contextp);
void chorus_model_eval(void* modelp);
bool chorus_model_events_pending(void* modelp);
uint64_t chorus_model_next_time_slot(void* modelp);
void chorus_model_final(void* modelp);
void chorus_model_delete(void* modelp);

namespace {
VerilatedContext* g_contextp = nullptr;
std::string g_covPath;
std::atomic<bool> g_covWritten{false};

void writeCoverage() {
    if (g_contextp == nullptr || g_covPath.empty()) return;
    bool expected = false;
    if (!g_covWritten.compare_exchange_strong(expected, true)) return;
    g_contextp->coveragep()->write(g_covPath.c_str());
}

std::atomic<bool> g_normalEnd{false};

// Exit callbacks run from vl_fatal ($fatal, $stop, fatal run-time errors such as "did not
// converge"). 5.006 then abort()s; current releases exit(1), which reads like a clean run that
// saw $error. End both the same way: coverage, then exit 134 (as SIGABRT would).
void onExit(void*) {
    writeCoverage();
    if (g_normalEnd.load()) return;
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(134);
}

void onSignal(int sig) {
    // Not async-signal-safe in theory; in practice the model is single-threaded and we exit
    // right after. A missing coverage file is the worse outcome for the caller.
    writeCoverage();
    std::fflush(stdout);
    std::fprintf(stderr, "%%Error: chorus: simulation stopped by signal %d (wall-clock limit)\n", sig);
    std::fflush(stderr);
    _exit(124);
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
}  // namespace

// Called for $error/$fatal/$stop (and assertion failures): see the header comment.
void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe) {
    Verilated::threadContextp()->errorCountInc();
    const std::string key = baseName(filename ? filename : "") + ":" + std::to_string(linenum);
    if (!maybe || g_stops.count(key)) {
        vl_stop(filename, linenum, hier);  // -> vl_fatal: exit callbacks (coverage), then abort
    }
}

int main(int argc, char** argv) {
    const std::unique_ptr<VerilatedContext> contextp{new VerilatedContext};
    g_contextp = contextp.get();
    contextp->commandArgs(argc, argv);
    contextp->errorLimit(1000000);
    g_covPath = plusArg(contextp.get(), "chorus+cov+");
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
    writeCoverage();
    g_normalEnd = true;
    if (!contextp->gotFinish() || rc != 0) {
        // Skip final(): a stuck model's final blocks add nothing and may hang.
        std::fflush(stdout);
        return rc;
    }
    chorus_model_final(topp);
    chorus_model_delete(topp);
    return contextp->gotError() ? 1 : 0;
}
