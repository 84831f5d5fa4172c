// Nothing lost: `fluoro chat --save` is killed with SIGKILL at random points while it generates,
// several times over one database. Each time the file must open cleanly and pass SQLite's
// integrity check, every answer the chat finished (the next "> " prompt was printed) must be
// stored complete with the text it printed, and the answer being generated must be stored
// incomplete, with the text so far and no stop reason. Real SmolLM2; a few seconds.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <random>
#include <thread>

#include "store/store.h"
#include "store_test_util.h"
#include "test_models.h"
#include "test_paths.h"

namespace fluoro::app {
namespace {

using namespace std::chrono_literals;

struct Child {
    pid_t pid = -1;
    int in = -1, out = -1;
};

Child spawn(const std::vector<std::string>& args) {
    int in_pipe[2], out_pipe[2];
    if (pipe(in_pipe) != 0 || pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
        dup2(in_pipe[0], 0);
        dup2(out_pipe[1], 1);
        const int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 2);
        close(in_pipe[1]);
        close(out_pipe[0]);
        std::vector<char*> argv;
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(in_pipe[0]);
    close(out_pipe[1]);
    return {pid, in_pipe[1], out_pipe[0]};
}

// Reads what the child printed until `done(output)` or the hang guard; false on EOF/guard.
bool read_until(const Child& c, std::string& output, const std::function<bool()>& done) {
    const auto guard = std::chrono::steady_clock::now() + 60s;  // hang guard, not a bound
    while (!done()) {
        if (std::chrono::steady_clock::now() > guard) return false;
        pollfd p{c.out, POLLIN, 0};
        if (poll(&p, 1, 20) <= 0) continue;
        char buf[4096];
        const ssize_t n = read(c.out, buf, sizeof buf);
        if (n <= 0) return false;
        output.append(buf, size_t(n));
    }
    return true;
}

// The answers printed between "> " prompts: only those followed by a prompt are finished.
std::vector<std::string> finished_answers(const std::string& out) {
    std::vector<std::string> parts;
    size_t pos = 0;
    for (;;) {
        const size_t next = out.find("\n> ", pos);
        if (next == std::string::npos) break;
        parts.push_back(out.substr(pos, next - pos));
        pos = next + 3;
    }
    if (!parts.empty() && parts[0].starts_with("> ")) parts[0] = parts[0].substr(2);
    return parts;
}

TEST(SaveSurvivesSigkill, RandomKillsDuringGeneration) {
    FLUORO_REQUIRE_MODEL(model, ::fluoro::test::kSmolLM2File);
    const auto db = test::temp_db("sigkill");
    const unsigned seed = std::random_device{}();
    std::printf("[ kill ] seed %u\n", seed);
    std::mt19937 rng(seed);
    int interrupted = 0;
    for (int round = 0; round < 4; ++round) {
        SCOPED_TRACE("round " + std::to_string(round) + ", seed " + std::to_string(seed));
        const Child c =
            spawn({FLUORO_CLI_PATH, "chat", model.string(), "--save", "--db", db.string(), "-n",
                   "48", "-q", "-t", "2", "-c", "512", "-s", std::to_string(round)});
        const std::string prompts =
            "Write a long story about a cat.\nWrite a long story about a dog.\n"
            "Write a long story about a bird.\n";
        ASSERT_EQ(write(c.in, prompts.data(), prompts.size()), ssize_t(prompts.size()));
        // Kill during answer `target` (0 or 1), a random moment after its first byte.
        const size_t target = rng() % 2;
        std::string out;
        const auto count_prompts = [&] {
            size_t n = 0;
            for (size_t p = out.find("> "); p != std::string::npos; p = out.find("\n> ", p + 1))
                ++n;
            return n;
        };
        ASSERT_TRUE(read_until(c, out, [&] {
            const size_t n = count_prompts();
            return n > target + 1 || (n == target + 1 && !out.ends_with("> "));
        })) << out;
        std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 150));
        kill(c.pid, SIGKILL);
        int status = 0;
        waitpid(c.pid, &status, 0);
        ASSERT_TRUE(WIFSIGNALED(status)) << "the chat exited on its own: " << out;
        char buf[4096];
        ssize_t n;
        while ((n = read(c.out, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
        close(c.in);
        close(c.out);

        Store store(db);  // opens cleanly (a StoreError would fail the test)
        {
            Statement check = store.db().prepare("PRAGMA integrity_check");
            ASSERT_TRUE(check.step());
            EXPECT_EQ(check.text(0), "ok");
        }
        const auto list = store.list_conversations();
        ASSERT_EQ(list.size(), size_t(round + 1));
        const ConversationRecord conv = store.load_conversation(list.back().id);
        std::vector<const MessageRecord*> answers;
        for (const auto& m : conv.messages)
            if (m.role == "assistant") answers.push_back(&m);
        const auto finished = finished_answers(out);
        ASSERT_GE(answers.size(), finished.size());
        ASSERT_LE(answers.size(), finished.size() + 1);
        for (size_t i = 0; i < finished.size(); ++i) {
            EXPECT_TRUE(answers[i]->complete);
            EXPECT_EQ(answers[i]->content, finished[i]);
        }
        for (const auto& r : conv.runs) {
            const bool complete = [&] {
                for (const auto* a : answers)
                    if (a->id == r.message_id) return a->complete;
                return false;
            }();
            EXPECT_EQ(r.stop_reason.has_value(), complete);
            std::string text;
            for (const auto& t : r.tokens) text += t.piece;
            for (const auto* a : answers)
                if (a->id == r.message_id) {
                    // The message text is the tokens' text: all of it once complete, what the
                    // last committed batch held otherwise.
                    if (complete)
                        EXPECT_EQ(a->content, text);
                    else
                        EXPECT_TRUE(text.starts_with(a->content));
                }
        }
        if (answers.size() == finished.size() + 1) {
            const MessageRecord& last = *answers.back();
            if (!last.complete) {
                ++interrupted;
                const std::string printed = out.substr(out.rfind("> ") + 2);
                // Stored text and printed text are prefixes of one another (each side may be a
                // batch or a pipe buffer ahead of the other).
                EXPECT_TRUE(printed.starts_with(last.content) || last.content.starts_with(printed))
                    << "stored '" << last.content << "' printed '" << printed << "'";
            }
        }
    }
    std::printf("[ kill ] %d of 4 kills interrupted an answer\n", interrupted);
    EXPECT_GE(interrupted, 1);
}

}  // namespace
}  // namespace fluoro::app
