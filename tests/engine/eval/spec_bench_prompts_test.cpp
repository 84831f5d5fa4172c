// The prompt sets of `fluoro bench spec` (eval/spec_bench_prompts.h): every "copy" prompt
// has a correct answer that really is copy-heavy under both default models' tokenizers (at least
// kMinReferenceCopied of its tokens end a 4-token run already in the chat-rendered prompt), and
// the other sets carry none. The title-casing task the copy set used to hold is kept here as the
// counterexample the criterion rejects.
#include "eval/spec_bench_prompts.h"

#include <gtest/gtest.h>

#include <set>

#include "backend/cpu/cpu_backend.h"
#include "chat/chat_options.h"
#include "decode/chat_tokenize.h"
#include "eval/spec_bench.h"
#include "model/model.h"
#include "test_models.h"

namespace fluoro::spec {
namespace {

double reference_copied(const Model& model, const std::string& prompt,
                        const std::string& reference) {
    const std::vector<ChatMessage> messages{{"user", prompt}};
    return copied_fraction(tokenize_chat(model, messages, true),
                           model.tokenizer().encode(reference, false, false));
}

void expect_copy_prompts_copy_heavy(const std::filesystem::path& path) {
    cpu::CpuBackend be(1);
    auto model = Model::load(path, be);
    int copy_prompts = 0;
    for (const BenchPrompt& p : spec_bench_prompts()) {
        if (p.category != "copy") {
            EXPECT_TRUE(p.reference.empty()) << p.text;
            continue;
        }
        ++copy_prompts;
        ASSERT_FALSE(p.reference.empty()) << p.text;
        const double f = reference_copied(*model, p.text, p.reference);
        EXPECT_GE(f, kMinReferenceCopied) << p.text;
        EXPECT_LT(f, 1.0) << "the answer should not be the prompt itself: " << p.text;
    }
    EXPECT_GE(copy_prompts, 3);

    // The counterexample: a correct title-cased list shares almost no 4-token runs with the list.
    const double title_case = reference_copied(
        *model,
        "Convert this list to title case, one item per line, keeping the order:\n\napple pie "
        "recipe\nhow to plant tomatoes\nthe history of the bicycle\nten tips for better sleep",
        "Apple Pie Recipe\nHow to Plant Tomatoes\nThe History of the Bicycle\nTen Tips for Better "
        "Sleep");
    EXPECT_LT(title_case, kMinReferenceCopied);
}

TEST(SpecBenchPrompts, CategoriesAreKnownAndEachHasPrompts) {
    std::set<std::string> seen;
    for (const BenchPrompt& p : spec_bench_prompts()) {
        EXPECT_TRUE(p.category == "copy" || p.category == "summarize" || p.category == "chat")
            << p.category;
        EXPECT_FALSE(p.text.empty());
        seen.insert(p.category);
    }
    EXPECT_EQ(seen.size(), 3u);
}

TEST(SpecBenchPromptsRealModel, SmolLM2CopyPromptsAreCopyHeavy) {
    FLUORO_REQUIRE_MODEL(path, test::kSmolLM2File);
    expect_copy_prompts_copy_heavy(path);
}

TEST(SpecBenchPromptsRealModel, Gemma3CopyPromptsAreCopyHeavy) {
    FLUORO_REQUIRE_MODEL(path, test::kGemma3File);
    expect_copy_prompts_copy_heavy(path);
}

}  // namespace
}  // namespace fluoro::spec
