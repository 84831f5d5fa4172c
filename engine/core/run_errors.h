// Errors of a run that its caller treats differently from any other failure: a prompt that does
// not fit (the client's mistake: a server answers 400 with both counts) and a non-finite value
// (the K/V involved cannot be trusted: the engine drops it).
#pragma once

#include <cstdint>
#include <string>

#include "core/error.h"

namespace fluoro {

// A prompt longer than the context can hold (and a KV policy that does not evict).
class ContextOverflowError : public Error {
public:
    ContextOverflowError(const std::string& what, int64_t prompt, int64_t context)
        : Error(what), prompt_tokens(prompt), context_tokens(context) {}
    int64_t prompt_tokens, context_tokens;
};

// The model produced a NaN or +infinity (a logit).
class NonFiniteError : public Error {
public:
    using Error::Error;
};

}  // namespace fluoro
