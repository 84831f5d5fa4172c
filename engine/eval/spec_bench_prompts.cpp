#include "eval/spec_bench_prompts.h"

namespace fluoro::spec {

const std::vector<BenchPrompt>& spec_bench_prompts() {
    static const std::vector<BenchPrompt> prompts{
        {"copy",
         "Fix the spelling mistakes in this paragraph and write out the whole corrected "
         "paragraph:\n\nThe old lighthouse stood on the edge of the cliff for more than a hundred "
         "years. Every night the keeper climbed the narow stairs, lit the great lamp and watched "
         "the ships pass safely through the dark water. When the storms came, he stayed awake "
         "untill morning, listening to the wind and the waves crashing against the rocks below.",
         "The old lighthouse stood on the edge of the cliff for more than a hundred years. Every "
         "night the keeper climbed the narrow stairs, lit the great lamp and watched the ships "
         "pass safely through the dark water. When the storms came, he stayed awake until "
         "morning, listening to the wind and the waves crashing against the rocks below."},
        {"copy",
         "Rename the variable `tmp` to `total` in this function and output the complete "
         "function:\n\n```python\ndef summarize_orders(orders):\n    \"\"\"Return the number of "
         "paid orders and their total value.\"\"\"\n    count = 0\n    tmp = 0.0\n    for order in "
         "orders:\n        if order.status != \"paid\":\n            continue\n        count += "
         "1\n        tmp += order.price * order.quantity\n    print(f\"{count} paid orders\")\n    "
         "return count, tmp\n```",
         "```python\ndef summarize_orders(orders):\n    \"\"\"Return the number of paid orders and "
         "their total value.\"\"\"\n    count = 0\n    total = 0.0\n    for order in orders:\n     "
         "   if order.status != \"paid\":\n            continue\n        count += 1\n        total "
         "+= order.price * order.quantity\n    print(f\"{count} paid orders\")\n    return count, "
         "total\n```"},
        {"copy",
         "Delete the sentence about the weather from this email and write out the rest of the "
         "email unchanged:\n\nHi Sam,\n\nThanks for sending the report on Friday. I read it "
         "over the weekend and the numbers for March look right to me. The weather here has been "
         "cold and wet all week. Could you add a short section on the new customers before we "
         "send it to the board? Let me know if you need the sales figures from Anna.\n\nBest,"
         "\nMaria",
         "Hi Sam,\n\nThanks for sending the report on Friday. I read it over the weekend and "
         "the numbers for March look right to me. Could you add a short section on the new "
         "customers before we send it to the board? Let me know if you need the sales figures "
         "from Anna.\n\nBest,\nMaria"},
        {"summarize",
         "Summarize the following passage in two sentences:\n\nThe village market opened every "
         "Saturday at dawn. Farmers arrived with carts of vegetables, eggs and cheese, and the "
         "baker set out loaves that were still warm. By mid-morning the square was full of "
         "families, and children ran between the stalls while their parents bargained over the "
         "price of apples. In the afternoon the musicians played near the fountain, and the "
         "market slowly emptied as the sun went down.",
         ""},
        {"summarize",
         "Give a one-paragraph summary of this text:\n\nRivers shape the land they flow through. "
         "Over thousands of years, moving water carries sand and stones downstream, cutting "
         "valleys and building wide plains where the river slows down. Floods spread rich soil "
         "over the fields, which is why many of the first farming villages grew up along river "
         "banks. Today, dams and canals control many rivers, bringing water to cities but also "
         "changing the habitats of fish and birds.",
         ""},
        {"chat", "What are three good habits for staying healthy?", ""},
        {"chat", "Tell me a short story about a cat who wants to fly.", ""},
        {"chat", "Why is the sky blue? Explain it simply.", ""},
    };
    return prompts;
}

}  // namespace fluoro::spec
