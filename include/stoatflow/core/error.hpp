// The one exception type the core throws: a message a user can act on plus the
// SQLSTATE the PostgreSQL layer reports it under (five characters, no PG headers needed).
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <stdexcept>
#include <string>

namespace stoatflow {

// SQLSTATE codes stoatflow raises or tests for (PostgreSQL's errcodes.txt): the only place they are
// spelled out in C++.
namespace sqlstate {
inline constexpr const char* kConnectionFailure = "08006";
inline constexpr const char* kNullValueNotAllowed = "22004";
inline constexpr const char* kInvalidParameterValue = "22023";
inline constexpr const char* kUniqueViolation = "23505";
inline constexpr const char* kSyntaxError = "42601";
inline constexpr const char* kUndefinedFunction = "42883";
inline constexpr const char* kDuplicateColumn = "42701";
inline constexpr const char* kUndefinedObject = "42704";
inline constexpr const char* kDuplicateObject = "42710";
inline constexpr const char* kInvalidName = "42602";
inline constexpr const char* kInvalidSchemaName = "3F000";
inline constexpr const char* kUndefinedTable = "42P01";
inline constexpr const char* kUndefinedColumn = "42703";
inline constexpr const char* kDatatypeMismatch = "42804";
inline constexpr const char* kInvalidTableDefinition = "42P16";
inline constexpr const char* kWrongObjectType = "42809";
inline constexpr const char* kInsufficientPrivilege = "42501";
inline constexpr const char* kNameTooLong = "42622";
inline constexpr const char* kFeatureNotSupported = "0A000";
inline constexpr const char* kObjectNotInPrerequisiteState = "55000";
inline constexpr const char* kLockNotAvailable = "55P03";
inline constexpr const char* kQueryCanceled = "57014";
inline constexpr const char* kProgramLimitExceeded = "54000";
inline constexpr const char* kOutOfMemory = "53200";
inline constexpr const char* kInternalError = "XX000";
inline constexpr const char* kDataCorrupted = "XX001";
inline constexpr const char* kInvalidDatetimeFormat = "22007";
inline constexpr const char* kDatetimeValueOutOfRange = "22008";
inline constexpr const char* kUntranslatableCharacter = "22P05";
inline constexpr const char* kGroupingError = "42803";
inline constexpr const char* kInvalidFunctionDefinition = "42P13";
}  // namespace sqlstate

class Error : public std::runtime_error {
public:
    Error(std::string sqlstate, std::string message, std::string hint = {})
        : std::runtime_error(std::move(message)), sqlstate_(std::move(sqlstate)),
          hint_(std::move(hint)) {}
    const std::string& sqlstate() const noexcept { return sqlstate_; }
    const std::string& hint() const noexcept { return hint_; }

private:
    std::string sqlstate_;
    std::string hint_;
};

}  // namespace stoatflow
