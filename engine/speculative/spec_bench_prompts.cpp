#include "speculative/spec_bench_prompts.h"

namespace fluoro::spec {

const std::vector<BenchPrompt>& spec_bench_prompts() {
    static const std::vector<BenchPrompt> prompts{
        {"copy",
         "Fix the spelling mistakes in this paragraph and write out the whole corrected "
         "paragraph:\n\nThe old lighthouse stood on the edge of the cliff for more than a hundred "
         "years. Every night the keeper climbed the narow stairs, lit the great lamp and watched "
         "the ships pass safely through the dark water. When the storms came, he stayed awake "
         "untill morning, listening to the wind and the waves crashing against the rocks below."},
        {"copy",
         "Rename the variable `tmp` to `total` in this function and output the complete "
         "function:\n\n```python\ndef sum_prices(items):\n    tmp = 0\n    for item in items:\n"
         "        if item.price > 0:\n            tmp += item.price * item.quantity\n"
         "    return tmp\n```"},
        {"copy",
         "Convert this list to title case, one item per line, keeping the order:\n\napple "
         "pie recipe\nhow to plant tomatoes\nthe history of the bicycle\nten tips for better "
         "sleep\nbuilding a bird house\nan introduction to chess openings"},
        {"summarize",
         "Summarize the following passage in two sentences:\n\nThe village market opened every "
         "Saturday at dawn. Farmers arrived with carts of vegetables, eggs and cheese, and the "
         "baker set out loaves that were still warm. By mid-morning the square was full of "
         "families, and children ran between the stalls while their parents bargained over the "
         "price of apples. In the afternoon the musicians played near the fountain, and the "
         "market slowly emptied as the sun went down."},
        {"summarize",
         "Give a one-paragraph summary of this text:\n\nRivers shape the land they flow through. "
         "Over thousands of years, moving water carries sand and stones downstream, cutting "
         "valleys and building wide plains where the river slows down. Floods spread rich soil "
         "over the fields, which is why many of the first farming villages grew up along river "
         "banks. Today, dams and canals control many rivers, bringing water to cities but also "
         "changing the habitats of fish and birds."},
        {"chat", "What are three good habits for staying healthy?"},
        {"chat", "Tell me a short story about a cat who wants to fly."},
        {"chat", "Why is the sky blue? Explain it simply."},
    };
    return prompts;
}

}  // namespace fluoro::spec
