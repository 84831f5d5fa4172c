// Error types thrown at the engine's module boundaries. Every message names what was wrong and
// where (file, byte offset, key, token, setting) so a user can act on it without a debugger.
#pragma once

#include <stdexcept>
#include <string>

namespace fluoro {

// Base for every error the engine reports to its callers.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A model file that cannot be read: I/O failure, truncation, corruption, hostile values.
class FormatError : public Error {
public:
    using Error::Error;
};

// A well-formed input the engine does not support (unknown tensor type, architecture, ...).
class UnsupportedError : public Error {
public:
    using Error::Error;
};

}  // namespace fluoro
