// The Engine on its thread, driven only through commands and observed only through events, on a
// small seeded model (no download): the event sequence of a run, failures that leave the engine
// usable, cancel within one step, tagged and blocking submission, regenerate and edit, and
// telemetry levels changed between runs, raw completions. Engine vs generate() on the real
// SmolLM2 is in engine_smollm2_test.cpp, multi-turn chat on it in engine_chat_test.cpp.
#include "runtime/engine.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_only_factory.h"
#include "core/error.h"
#include "engine/runtime/engine_test_events.h"
#include "gguf/test_model.h"
#include "runtime/command_queue.h"
#include "test_temp.h"

namespace fluoro {
namespace {

using namespace std::chrono_literals;

std::filesystem::path tiny_model() {
    const auto path = test::unique_temp_path("engine_tiny.gguf");
    if (!std::filesystem::exists(path)) {
        gguf::TestModelSpec spec;
        spec.n_ctx = 4096;
        gguf::write_test_model(path, spec);
    }
    return path;
}

LoadModel load_tiny() {
    LoadModel c{tiny_model(), {}};
    c.settings.threads = 1;
    c.settings.ctx = 4096;
    return c;
}

ChangeSettings greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0;
    return ChangeSettings{p, max_tokens, std::nullopt};
}

using test::all_of;
using test::next_run;

// The next n runs' RunStarted and RunFinished.
std::pair<std::vector<RunStarted>, std::vector<RunFinished>> next_runs(Engine& engine, int n) {
    std::vector<RunStarted> starts;
    std::vector<RunFinished> fins;
    for (int i = 0; i < n; ++i) {
        const auto ev = next_run(engine);
        starts.push_back(all_of<RunStarted>(ev).at(0));
        fins.push_back(std::get<RunFinished>(ev.back()));
    }
    return {starts, fins};
}

TEST(Engine, ARunReportsStartStepsTokensAndFinishInOrder) {
    Engine engine({TelemetryLevel::Full});
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(12));
    engine.submit(SendMessage{"hello"});
    const auto events = next_run(engine);
    ASSERT_TRUE(std::holds_alternative<ModelLoaded>(events.at(0)));
    EXPECT_EQ(std::get<ModelLoaded>(events[0]).arch, "llama");
    ASSERT_TRUE(std::holds_alternative<ConversationStarted>(events.at(1)));
    const auto& start = std::get<RunStarted>(events.at(2));
    EXPECT_EQ(start.kind, RunKind::Send);
    EXPECT_EQ(start.user_text, "hello");
    EXPECT_GT(start.prompt_tokens, 0);
    EXPECT_EQ(start.max_tokens, 12);

    const auto tokens = all_of<TokenEvent>(events);
    const auto steps = all_of<StepEvent>(events);
    const auto fin = std::get<RunFinished>(events.back());
    EXPECT_EQ(fin.run, start.run);
    EXPECT_TRUE(fin.error.empty());
    std::string text;
    for (size_t i = 0; i < tokens.size(); ++i) {
        EXPECT_EQ(tokens[i].run, start.run);
        EXPECT_EQ(tokens[i].index, int64_t(i));
        if (tokens[i].id >= 0) {
            EXPECT_FALSE(tokens[i].top.empty());
        }
        text += tokens[i].piece;
    }
    EXPECT_EQ(text, fin.text);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps[0].phase, StepPhase::Prefill);
    EXPECT_EQ(steps[0].tokens, start.prompt_tokens);
    int64_t prev_end = 0;
    for (size_t i = 0; i < steps.size(); ++i) {
        EXPECT_EQ(steps[i].index, int64_t(i));
        if (i > 0) {
            EXPECT_EQ(steps[i].phase, StepPhase::Decode);
        }
        EXPECT_GE(steps[i].start_ns, prev_end);
        int64_t sum = 0;
        for (int64_t v : steps[i].op_ns) sum += v;
        EXPECT_LE(sum, steps[i].end_ns - steps[i].start_ns);
        EXPECT_GT(steps[i].op_ns[size_t(TimeCategory::Matmul)], 0);
        prev_end = steps[i].end_ns;
    }
    // One step per sampled token, plus the one whose logits gave EOG when that ended the run.
    const size_t sampled = size_t(fin.n_tokens);
    EXPECT_EQ(steps.size(), sampled + (fin.stop == "eog" ? 1 : 0));
    EXPECT_EQ(all_of<PrefixCacheEvent>(events).size(), 1u);
    EXPECT_FALSE(all_of<MemoryCounters>(events).empty());
    EXPECT_FALSE(all_of<std::shared_ptr<const KvSnapshot>>(events).empty());
}

TEST(Engine, AFailingCommandYieldsAnErrorEventAndTheEngineLivesOn) {
    Engine engine;
    engine.submit(SendMessage{"no model yet"});
    EXPECT_THROW(engine.submit_blocking(LoadModel{"/nonexistent/model.gguf", {}}), Error);
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(3));
    engine.submit(EditAndResend{5, "x"});  // no such message
    engine.submit(SendMessage{"now it works"});
    const auto events = next_run(engine);
    const auto errors = all_of<ErrorEvent>(events);
    ASSERT_EQ(errors.size(), 3u);
    EXPECT_EQ(errors[0].command, "send");
    EXPECT_NE(errors[0].message.find("no model"), std::string::npos);
    EXPECT_EQ(errors[1].command, "load_model");
    EXPECT_NE(errors[1].message.find("/nonexistent/model.gguf"), std::string::npos);
    EXPECT_EQ(errors[2].command, "edit");
    EXPECT_EQ(std::get<RunFinished>(events.back()).stop, "max_tokens");
    EXPECT_EQ(std::get<RunFinished>(events.back()).n_tokens, 3);
    EXPECT_THROW(engine.submit_blocking(ChangeSettings{std::nullopt, 0, std::nullopt}), Error);
}

// Every submission gets a number, which its run's RunStarted and a failure's ErrorEvent carry:
// how a caller sharing the engine with others (the workbench's API server) finds its own run.
TEST(Engine, RunsAndFailuresCarryTheirSubmissionNumber) {
    Engine engine;
    const uint64_t fail = engine.submit(SendMessage{"no model yet"});
    engine.submit_blocking(load_tiny());
    const uint64_t settings = engine.submit(greedy(2));
    const uint64_t first = engine.submit(SendMessage{"one"});
    const uint64_t second = engine.submit_tagged("t", SendMessage{"two"});
    EXPECT_LT(fail, settings);
    EXPECT_LT(settings, first);
    EXPECT_LT(first, second);
    const auto a = next_run(engine);
    const auto b = next_run(engine);
    const auto errors = all_of<ErrorEvent>(a);
    ASSERT_EQ(errors.size(), 1u);
    EXPECT_EQ(errors[0].submission, fail);
    EXPECT_EQ(all_of<RunStarted>(a).at(0).submission, first);
    EXPECT_EQ(all_of<RunStarted>(b).at(0).submission, second);
    EXPECT_EQ(all_of<RunStarted>(b).at(0).user_text, "two");
}

TEST(Engine, ABackendThatCannotRunLeavesTheLoadedModelWorking) {
    // The engine library alone has no CUDA backend: asking for it is a clear error, and the model
    // loaded on the CPU before keeps answering (the GUI's backend switch relies on this).
    Engine engine;
    engine.submit_blocking(load_tiny());
    LoadModel cuda = load_tiny();
    cuda.settings.backend = BackendKind::Cuda;
    try {
        engine.submit_blocking(cuda);
        FAIL() << "a CUDA load succeeded in a build without CUDA";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("CUDA"), std::string::npos) << e.what();
    }
    engine.submit(greedy(3));
    engine.submit(SendMessage{"still here"});
    const auto events = next_run(engine);
    EXPECT_EQ(std::get<RunFinished>(events.back()).stop, "max_tokens");
    EXPECT_EQ(std::get<RunFinished>(events.back()).n_tokens, 3);
}

TEST(Engine, TheBackendFactoryMakesEachLoadsBackend) {
    std::vector<BackendKind> asked;
    EngineOptions o;
    o.backend_factory = [&](BackendKind k, int threads) {
        asked.push_back(k);
        return make_cpu_only_backend(BackendKind::Cpu, threads);
    };
    Engine engine(o);
    LoadModel c = load_tiny();
    c.settings.backend = BackendKind::Cuda;  // the factory decides what that means
    engine.submit_blocking(c);
    const auto loaded = all_of<ModelLoaded>(engine.events().drain());
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0].backend, "cpu");
    EXPECT_EQ(asked, std::vector<BackendKind>{BackendKind::Cuda});
}

TEST(Engine, CompleteRunsAStatelessRequestAndReusesTheSharedPrefix) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(5));
    const std::string system = "You are a terse assistant. Answer in one word. Rules follow.";
    Complete first{{{"system", system}, {"user", "hello"}}};
    first.max_tokens = 2;  // this run only
    engine.submit(first);
    const auto a = next_run(engine);
    EXPECT_EQ(all_of<ConversationStarted>(a).at(0).system_prompt, system);
    EXPECT_EQ(all_of<RunStarted>(a).at(0).system_prompt, system);
    EXPECT_EQ(std::get<RunFinished>(a.back()).n_tokens, 2);
    // A second request: earlier turns, the same system prompt, another question.
    engine.submit(Complete{
        {{"system", system}, {"user", "hello"}, {"assistant", "hi"}, {"user", "and now?"}}});
    const auto b = next_run(engine);
    const auto& fb = std::get<RunFinished>(b.back());
    EXPECT_EQ(fb.stop, "max_tokens");
    EXPECT_EQ(fb.n_tokens, 5);  // the engine's own setting is back
    EXPECT_GT(fb.cached_tokens, 0);
    EXPECT_LT(fb.cached_tokens, fb.prompt_tokens);
    EXPECT_EQ(all_of<RunStarted>(b).at(0).kept_messages, 2);  // the two earlier turns
}

TEST(Engine, CompleteRefusesMessagesItCannotRun) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    const auto refused = [&](std::vector<ChatMessage> m, const char* why) {
        try {
            engine.submit_blocking(Complete{std::move(m)});
            ADD_FAILURE() << "accepted: " << why;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    refused({}, "end with a user message");
    refused({{"system", "s"}}, "end with a user message");
    refused({{"user", "a"}, {"assistant", "b"}}, "end with a user message");
    refused({{"user", "a"}, {"wizard", "b"}, {"user", "c"}}, "role 'wizard'");
    Complete bad{{{"user", "a"}}};
    bad.max_tokens = 0;
    EXPECT_THROW(engine.submit_blocking(bad), Error);
    engine.submit(greedy(3));
    engine.submit(Complete{{{"user", "still fine"}}});
    EXPECT_EQ(std::get<RunFinished>(next_run(engine).back()).n_tokens, 3);
}

// A raw completion is one plain-text prompt, and its RunStarted says so (a stored run is honest
// about having had no template); anything else is refused.
TEST(Engine, RawCompleteTakesOneMessageAndSaysItWasRaw) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(ChangeSettings{std::nullopt, 3, std::string("a system prompt for chats")});
    Complete two{{{"system", "s"}, {"user", "a"}}};
    two.raw = true;
    try {
        engine.submit_blocking(two);
        ADD_FAILURE() << "a raw completion of two messages was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("raw completion takes one user message"),
                  std::string::npos)
            << e.what();
    }
    Complete raw{{{"user", "Once upon a time"}}};
    raw.raw = true;
    engine.submit(raw);
    const auto events = next_run(engine);
    const RunStarted rs = all_of<RunStarted>(events).at(0);
    EXPECT_TRUE(rs.raw);
    EXPECT_EQ(rs.user_text, "Once upon a time");
    EXPECT_EQ(rs.system_prompt, "");
    EXPECT_EQ(std::get<RunFinished>(events.back()).n_tokens, 3);
    engine.submit(SendMessage{"and a chat"});
    const RunStarted chat = all_of<RunStarted>(next_run(engine)).at(0);
    EXPECT_FALSE(chat.raw);
    EXPECT_EQ(chat.system_prompt, "a system prompt for chats");  // the engine's is back
}

// Writes the tiny test model without the chat template its vocabulary always brings.
void write_model_without_template(const std::filesystem::path& path) {
    gguf::GgufWriter w = gguf::make_test_model(gguf::TestModelSpec{});
    ASSERT_TRUE(w.erase("tokenizer.chat_template"));
    w.write(path);
}

// ModelLoaded names the chat format, and says when it is not the file's own template (which the
// CLI warns about, with the note): the tiny model carries a ChatML template, rendered as Jinja;
// without it, its architecture (llama) implies none and ChatML is the fallback.
TEST(Engine, ModelLoadedSaysWhichChatTemplateAndWhetherItIsAFallback) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    auto loaded = all_of<ModelLoaded>(engine.events().drain());
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0].chat_template, "jinja");  // the file's own template is rendered
    EXPECT_FALSE(loaded[0].chat_template_fallback);
    EXPECT_EQ(loaded[0].chat_template_note, "");
    const auto path = test::unique_temp_path("engine_no_template.gguf");
    write_model_without_template(path);
    LoadModel no_template = load_tiny();
    no_template.path = path;
    no_template.settings.ctx = 256;
    engine.submit_blocking(no_template);
    loaded = all_of<ModelLoaded>(engine.events().drain());
    ASSERT_EQ(loaded.size(), 1u);
    EXPECT_EQ(loaded[0].chat_template, "chatml");
    EXPECT_TRUE(loaded[0].chat_template_fallback);
    EXPECT_EQ(loaded[0].chat_template_note,
              "no chat template in the file and its architecture 'llama' implies none; using "
              "ChatML");
    std::filesystem::remove(path);
}

// A conversation kept elsewhere (a stored one) continues from its turns: the next message sees
// the same prompt, and greedy gives the same reply, as in the conversation that made them.
TEST(Engine, NewConversationWithMessagesContinuesThem) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(4));
    for (const char* text : {"first", "second", "third"}) engine.submit(SendMessage{text});
    const auto [starts, fins] = next_runs(engine, 3);
    const std::vector<ChatMessage> history{{"user", "first"},
                                           {"assistant", fins[0].text},
                                           {"user", "second"},
                                           {"assistant", fins[1].text}};
    engine.submit(NewConversation{"", history});
    engine.submit(SendMessage{"third"});
    const auto ev = next_run(engine);
    const auto started = all_of<ConversationStarted>(ev);
    ASSERT_EQ(started.size(), 1u);
    ASSERT_EQ(started[0].messages.size(), history.size());
    for (size_t i = 0; i < history.size(); ++i) {
        EXPECT_EQ(started[0].messages[i].role, history[i].role);
        EXPECT_EQ(started[0].messages[i].content, history[i].content);
    }
    const RunStarted s = all_of<RunStarted>(ev).at(0);
    EXPECT_NE(s.conversation, starts[2].conversation);
    EXPECT_EQ(s.kept_messages, 4);
    EXPECT_EQ(s.prompt_ids, starts[2].prompt_ids);
    EXPECT_EQ(std::get<RunFinished>(ev.back()).text, fins[2].text);
}

// A chat taken up again after a Complete replaced it keeps its conversation id.
TEST(Engine, NewConversationResumesAnEarlierConversationUnderItsId) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(3));
    const uint64_t own = engine.submit(SendMessage{"mine"});
    const auto a = next_run(engine);
    const ConversationStarted chat = all_of<ConversationStarted>(a).at(0);
    EXPECT_EQ(chat.submission, own);
    const std::string reply = std::get<RunFinished>(a.back()).text;
    const uint64_t request = engine.submit(Complete{{{"user", "a request"}}});
    const auto b = next_run(engine);
    EXPECT_EQ(all_of<ConversationStarted>(b).at(0).submission, request);
    EXPECT_NE(all_of<RunStarted>(b).at(0).conversation, chat.conversation);
    NewConversation back{"", {{"user", "mine"}, {"assistant", reply}}};
    back.resume = chat.conversation;
    engine.submit(back);
    engine.submit(SendMessage{"mine again"});
    const auto c = next_run(engine);
    EXPECT_EQ(all_of<ConversationStarted>(c).at(0).conversation, chat.conversation);
    const RunStarted s = all_of<RunStarted>(c).at(0);
    EXPECT_EQ(s.conversation, chat.conversation);
    EXPECT_EQ(s.kept_messages, 2);
}

// A message meant for one conversation is refused, by name, when a Complete queued before it took
// the engine's place; nothing is added to the request's conversation, and once the conversation
// is taken up again the same message goes to it.
TEST(Engine, SendMessageForAnotherConversationIsRefused) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(3));
    engine.submit(SendMessage{"mine"});
    const auto a = next_run(engine);
    const uint64_t mine = all_of<RunStarted>(a).at(0).conversation;
    const std::string reply = std::get<RunFinished>(a.back()).text;
    engine.submit(Complete{{{"user", "a request"}}});
    SendMessage late{"meant for mine", mine};
    try {
        engine.submit_blocking(late);
        ADD_FAILURE() << "added to the request's conversation";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("conversation " + std::to_string(mine) +
                                             " is not the engine's live one"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_NE(all_of<RunStarted>(next_run(engine)).at(0).conversation, mine);  // the request's

    NewConversation back{"", {{"user", "mine"}, {"assistant", reply}}, mine, "named"};
    engine.submit(back);
    engine.submit(late);
    const auto c = next_run(engine);
    EXPECT_EQ(all_of<ErrorEvent>(c).at(0).command, "send");  // the refusal, then the resumed run
    const ConversationStarted resumed = all_of<ConversationStarted>(c).at(0);
    EXPECT_EQ(resumed.conversation, mine);
    EXPECT_EQ(resumed.title, "named");
    EXPECT_EQ(all_of<RunStarted>(c).at(0).user_text, "meant for mine");
    EXPECT_EQ(all_of<RunStarted>(c).at(0).kept_messages, 2);
}

TEST(Engine, NewConversationRefusesTurnsItCannotContinue) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    const auto refused = [&](std::vector<ChatMessage> m, const char* why) {
        try {
            engine.submit_blocking(NewConversation{"", std::move(m)});
            ADD_FAILURE() << "accepted: " << why;
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
        }
    };
    refused({{"user", "a"}}, "end with an assistant turn");
    NewConversation unknown;
    unknown.resume = 99;
    try {
        engine.submit_blocking(unknown);
        ADD_FAILURE() << "resumed a conversation that never was";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("no conversation 99"), std::string::npos) << e.what();
    }
    refused({{"system", "s"}, {"user", "a"}, {"assistant", "b"}}, "role 'system'");
    engine.submit(greedy(3));
    engine.submit(SendMessage{"still fine"});
    EXPECT_EQ(std::get<RunFinished>(next_run(engine).back()).n_tokens, 3);
}

TEST(Engine, CancelStopsTheRunWithinOneStep) {
    Engine engine({TelemetryLevel::Summary});
    engine.submit_blocking(load_tiny());
    engine.submit_blocking(greedy(4000));
    engine.submit(SendMessage{"go on forever"});
    engine.submit(SendMessage{"queued before the cancel"});
    int64_t ordinal = 0, tokens_after_cancel = 0, cancel_at = -1;
    std::vector<RunFinished> finished;
    const auto deadline = std::chrono::steady_clock::now() + 120s;
    while (finished.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        auto ev = engine.events().pop(100ms);
        if (!ev) continue;
        ++ordinal;
        // id -1: the decoder's flush of an incomplete UTF-8 tail at the end of the run (the tiny
        // model emits arbitrary bytes), not a sampled token.
        if (const auto* te = std::get_if<TokenEvent>(&*ev); te && te->id >= 0) {
            if (cancel_at < 0) {
                engine.cancel();
                // Every event pushed so far came before the cancel took effect.
                cancel_at = engine.events().stats().pushed;
            } else if (ordinal > cancel_at) {
                ++tokens_after_cancel;
            }
        }
        if (auto* f = std::get_if<RunFinished>(&*ev)) finished.push_back(*f);
    }
    ASSERT_EQ(finished.size(), 2u);
    EXPECT_EQ(finished[0].stop, "cancelled");
    EXPECT_LT(finished[0].n_tokens, 4000);
    EXPECT_LE(tokens_after_cancel, 1);
    EXPECT_EQ(finished[1].stop, "cancelled");  // queued before cancel(): stopped too
    EXPECT_EQ(finished[1].n_tokens, 0);
    // Later commands are not affected.
    engine.submit(greedy(2));
    engine.submit(SendMessage{"after"});
    const auto fin = std::get<RunFinished>(next_run(engine).back());
    EXPECT_EQ(fin.stop, "max_tokens");
    EXPECT_EQ(fin.n_tokens, 2);
}

TEST(Engine, RegenerateAndEditKeepTheRightHistory) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(4));
    engine.submit(SendMessage{"first"});
    engine.submit(SendMessage{"second"});
    engine.submit(Regenerate{});
    engine.submit(EditAndResend{0, "first, edited"});
    const auto [starts, fins] = next_runs(engine, 4);
    EXPECT_EQ(starts[0].kept_messages, 0);
    EXPECT_EQ(starts[1].kept_messages, 2);
    EXPECT_EQ(starts[2].kind, RunKind::Regenerate);
    EXPECT_EQ(starts[2].kept_messages, 3);  // first, reply, second
    EXPECT_TRUE(starts[2].user_text.empty());
    EXPECT_EQ(fins[2].text, fins[1].text);  // greedy: the same reply again
    EXPECT_GT(fins[2].cached_tokens, 0);    // the history's KV was reused
    EXPECT_EQ(starts[3].kind, RunKind::Edit);
    EXPECT_EQ(starts[3].kept_messages, 0);
    EXPECT_EQ(starts[3].user_text, "first, edited");
    EXPECT_LT(starts[3].prompt_tokens, starts[2].prompt_tokens);
    EXPECT_EQ(starts[0].conversation, starts[3].conversation);
}

TEST(Engine, TelemetryLevelChangesApplyToTheNextSteps) {
    Engine engine({TelemetryLevel::Off});
    engine.submit_blocking(load_tiny());
    engine.submit(greedy(3));
    engine.submit(SendMessage{"quiet"});
    const auto off = next_run(engine);
    EXPECT_TRUE(all_of<StepEvent>(off).empty());
    EXPECT_TRUE(all_of<MemoryCounters>(off).empty());
    for (const auto& t : all_of<TokenEvent>(off)) EXPECT_TRUE(t.top.empty());
    EXPECT_EQ(all_of<TokenEvent>(off).size(), 3u);

    engine.set_telemetry_level(TelemetryLevel::Summary);
    engine.submit(SendMessage{"louder"});
    const auto summary = next_run(engine);
    const auto steps = all_of<StepEvent>(summary);
    ASSERT_FALSE(steps.empty());
    for (const auto& s : steps) EXPECT_EQ(s.op_ns, CategoryTimes{});  // no per-op split
    EXPECT_TRUE(all_of<std::shared_ptr<const KvSnapshot>>(summary).empty());
    EXPECT_EQ(all_of<RunStarted>(summary).at(0).level, TelemetryLevel::Summary);
}

TEST(Engine, TaggedSubmissionsReplaceTheQueuedOne) {
    Engine engine;
    engine.submit_blocking(load_tiny());
    engine.submit_blocking(greedy(3));
    // Keep the engine busy while the tagged commands queue up behind it.
    engine.submit(ChangeSettings{std::nullopt, 200, std::nullopt});
    engine.submit(SendMessage{"busy"});
    engine.submit_tagged("max", ChangeSettings{std::nullopt, 5, std::nullopt});
    engine.submit(SendMessage{"a"});
    engine.submit_tagged("max", ChangeSettings{std::nullopt, 7, std::nullopt});
    engine.submit(SendMessage{"b"});
    next_run(engine);
    const auto a = std::get<RunFinished>(next_run(engine).back());
    const auto b = std::get<RunFinished>(next_run(engine).back());
    EXPECT_EQ(a.n_tokens, 200);  // the first tagged command never ran
    EXPECT_EQ(b.n_tokens, 7);
}

TEST(CommandQueue, TaggedPushReplacesAndBlockingPromisesAreKept) {
    CommandQueue q;
    auto first = std::make_shared<std::promise<void>>();
    auto f1 = first->get_future();
    q.push(ChangeSettings{std::nullopt, 1, std::nullopt}, "t", first);
    q.push(SendMessage{"x"});
    const uint64_t third = q.push(ChangeSettings{std::nullopt, 2, std::nullopt}, "t");
    EXPECT_EQ(third, 3u);
    EXPECT_EQ(q.size(), 2u);
    EXPECT_THROW(f1.get(), Error);  // superseded
    auto a = q.wait_pop();
    ASSERT_TRUE(a);
    EXPECT_TRUE(std::holds_alternative<SendMessage>(a->command));
    auto b = q.wait_pop();
    ASSERT_TRUE(b);
    EXPECT_EQ(std::get<ChangeSettings>(b->command).max_tokens, 2);
    auto late = std::make_shared<std::promise<void>>();
    auto f2 = late->get_future();
    q.push(UnloadModel{}, {}, late);
    q.close();
    EXPECT_THROW(f2.get(), Error);  // dropped by close
    EXPECT_FALSE(q.wait_pop().has_value());
    EXPECT_EQ(q.push(UnloadModel{}), 0u);
}

}  // namespace
}  // namespace fluoro

namespace fluoro {
namespace {

// A template whose generation prompt opens <think> (as Qwen 3's and DeepSeek-R1's do): the reply
// starts inside the reasoning. The tiny model's text is random and never closes the block, so
// all of it is reasoning; the default ChatML template makes all of it answer. The conversation
// keeps the reply as generated either way.
TEST(Engine, TheReplyIsSplitIntoReasoningAndAnswer) {
    const auto path = test::unique_temp_path("engine_think.gguf");
    gguf::GgufWriter w = gguf::make_test_model(gguf::TestModelSpec{});
    ASSERT_TRUE(w.erase("tokenizer.chat_template"));
    w.add_string("tokenizer.chat_template",
                 "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n"
                 "{% endif %}");
    w.write(path);
    for (const bool thinking : {true, false}) {
        Engine engine;
        LoadModel load = load_tiny();
        if (thinking) load.path = path;
        engine.submit_blocking(load);
        engine.submit(greedy(10));
        engine.submit(SendMessage{"hello"});
        const auto events = next_run(engine);
        const RunFinished fin = std::get<RunFinished>(events.back());
        ASSERT_GT(fin.n_tokens, 0);
        std::string reasoning, answer;
        for (const TokenEvent& t : all_of<TokenEvent>(events)) {
            EXPECT_TRUE(t.split);
            EXPECT_EQ(t.reasoning, thinking);
            reasoning += t.reasoning_text;
            answer += t.answer_text;
        }
        EXPECT_EQ(reasoning, fin.reasoning_text);
        EXPECT_EQ(answer, fin.answer_text);
        EXPECT_EQ(thinking ? fin.reasoning_text : fin.answer_text, fin.text);
        EXPECT_EQ(fin.reasoning_tokens, thinking ? fin.n_tokens : 0);
        if (thinking) {
            EXPECT_GT(fin.reasoning_ns, 0);
            EXPECT_LE(fin.reasoning_ns, fin.t_ns);
        } else {
            EXPECT_EQ(fin.reasoning_ns, 0);
        }
        // The next turn's prompt holds the reply as generated.
        engine.submit(SendMessage{"again"});
        const RunStarted next = all_of<RunStarted>(next_run(engine)).at(0);
        std::string prompt;
        for (const std::string& p : next.prompt_pieces) prompt += p;
        EXPECT_NE(prompt.find(fin.text), std::string::npos);
    }
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace fluoro
