#pragma once
// What every subcommand does to its input before any work: numbers read exactly (a flag's
// value is its value or a refusal naming the flag, never a saturated, defaulted or wrapped
// one), files to read checked to be regular files before they are opened (a FIFO would block,
// a folder or device read nonsense), files to write checked before a minute of training is
// spent (their folder exists and is writable, nothing but a regular file is replaced), and no
// two outputs (or an output and an input) that are the same file.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace oxcli {

// `--name N`: a whole number in [min, max] written in decimal (an optional sign, digits, nothing
// else), stored in `target` while parsing; anything else is a parse error (exit 2) such as
// "--seed: '-1' is not a whole number in [0, 18446744073709551615]".
CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, int64_t& target,
                                int64_t min, int64_t max, const std::string& help);
CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, uint64_t& target,
                                uint64_t min, uint64_t max, const std::string& help);
CLI::Option* add_integer_option(CLI::App* cmd, const std::string& name, int& target, int min,
                                int max, const std::string& help);

// `--name X`: a finite number with min < X <= max (NaN, infinities, values that overflow or
// underflow to zero, trailing text: refused, the bounds printed with %g).
CLI::Option* add_real_option(CLI::App* cmd, const std::string& name, double& target,
                             double exclusive_min, double max, const std::string& help);

// The thread count to use for `--threads requested` (0: every hardware thread); more than the
// hardware has is capped, with a note on stderr naming `command`.
int threads_to_use(int requested, const char* command);

// Throws ox::Error{Io} "[FLAG] 'PATH' is a FIFO (named pipe), not a regular file" (or a folder,
// a device, missing, a name too long, a loop of symbolic links) unless `path` is a regular file.
// stat only: nothing is opened.
void check_input_file(const std::string& path, const char* flag);
// The same for a folder that must exist.
void check_input_folder(const std::string& path, const char* flag);

// `path` can be written as a file: it is a regular file or absent, and its folder exists and
// is writable (Io error naming FLAG otherwise); with `append`, an existing file must be
// writable itself (a checkpoint is renamed over its target, a log appended to). Nothing is
// created.
void check_output_file(const std::string& path, const char* flag, bool append = false);
// The checkpoint file a run saves to: an existing file must be a safetensors checkpoint
// (unless `overwrite`), and a file can be created beside it (Io errors naming `flag`).
void check_checkpoint_destination(const std::string& path, const char* flag, bool overwrite);
// `path` is a writable folder, or can be created as one (its nearest existing ancestor is).

void check_output_folder(const std::string& path, const char* flag);

// Whether two paths name the same file or folder: the same inode when both exist (hard links,
// symbolic links, "./x" and "x"), else the same weakly canonical path.
bool same_file(const std::string& a, const std::string& b);

// Value error "FLAG_A and FLAG_B name the same file 'A'" when they do (empty paths are unset).
void check_distinct(const char* flag_a, const std::string& a, const char* flag_b,
                    const std::string& b);

// Text from a file made safe for a terminal: control characters and bytes that are not UTF-8
// become \n, \r, \t or \xNN, and a backslash doubles (inspect.cpp).
std::string printable(std::string_view text);

}  // namespace oxcli
