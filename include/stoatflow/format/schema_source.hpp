// Writer schemas by id for a source whose records carry a schema id (the Confluent framing:
// README "Formats"), as the format room sees them: an abstract source the decoders ask, so that
// the format room needs no registry (src/README.md: format includes core only). The PostgreSQL
// layer implements it over the schema registry's cache (registry/schema_cache.hpp); tests with a
// map. lookup() never waits: an id not fetched yet is Pending, and a record carrying it waits
// (the worker does not hand it to the decoder), it is no dead letter.
#pragma once
#include "stoatflow/core/no_postgres.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace stoatflow::format {

class SchemaSource {
public:
    enum class State { Ready, Pending, NotFound };
    struct Answer {
        State state = State::Pending;
        std::shared_ptr<const std::string> text;  // Ready: the schema as the registry holds it
        std::string type = "AVRO";                // Ready: AVRO, PROTOBUF, JSON
        std::string detail;                       // NotFound: the registry's answer
    };
    virtual ~SchemaSource() = default;
    virtual Answer lookup(std::uint32_t id) = 0;
    // Why the schemas cannot be had now ("" when they can): names the registry (its URL), never
    // its password. Records whose schema is Pending wait meanwhile.
    virtual std::string unavailable() const = 0;
};

}  // namespace stoatflow::format
