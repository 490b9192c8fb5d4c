// Compile-time proof that the pure core never sees a PostgreSQL header.
// Every core header includes this; postgres.h defines POSTGRES_H and PG_VERSION_NUM.
#pragma once
#if defined(POSTGRES_H) || defined(PG_VERSION_NUM) || defined(PG_MODULE_MAGIC)
#error "stoatflow core must not include PostgreSQL headers (src/core is pure C++)"
#endif
