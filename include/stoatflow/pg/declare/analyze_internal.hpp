// The PostgreSQL half of the declaration analysis (src/pg/declare/analyze_pg.cpp,
// analyze_judge.cpp): plain structs in palloc'd memory and functions that ereport, called through
// pg_call by src/pg/declare/analyze.cpp.
#pragma once

#include "stoatflow/pg/border/guard.hpp"

struct Node;

namespace stoatflow::pg::analyze_detail {

enum Role : int { kKey, kEventTime, kGroupBy, kFilter, kAggregates };

struct RowColumn {
    const char* name;
    Oid type;
    int32 typmod;
};
// The source's row: its columns, then the metadata columns.
struct RowDesc {
    int n;
    RowColumn* cols;
};

struct CallInfo {
    Oid aggfnoid, transfn, finalfn, combinefn, serialfn, deserialfn, transtype;
    const char* aggregate;
    const char* initval;  // NULL: agginitval is NULL
    bool finalextra;
    char finalmodify;
    bool strict;
    int location;
};

struct ItemInfo {
    const char* name;  // the sink column; NULL for key, event_time and filter
    Oid type;
    int32 typmod;
    const char* type_name;
    const char* tree;
    // The item as stored (README "Expressions and PostgreSQL aggregates"): deparsed under the
    // pinned path, so every name outside pg_catalog is schema-qualified; a list item with its
    // sink column as AS.
    const char* stored;
    int ncalls;
    CallInfo* calls;
};

struct TextAnalysis {
    // in
    const char* text;
    Role role;
    const RowDesc* row;
    bool need_combine;        // session and sliding windows (README "Semantics")
    const char* window_kind;  // for messages
    const char* parse_path;   // names resolved along this search_path; NULL: the pinned one
    // out
    int nitems;
    ItemInfo* items;
    bool epoch_ms;  // event_time: a number of epoch milliseconds (else timestamptz)
};

// search_path = pg_catalog, pg_temp at a new GUC nest level; unpin pops it.
int pin_search_path();
void unpin_search_path(int nest);
// The row from stoatflow.source.columns (jsonb text) plus the metadata columns; type names
// resolved under the pinned path. ereports 22023 on anything else than the documented shape.
const RowDesc* row_from_json(const char* json);
// The byte offset of the first identifier PostgreSQL's scanner would truncate (longer than
// NAMEDATALEN - 1 bytes), or -1 (analyze_names.cpp).
int long_identifier(const char* text);
// Parses, analyzes and judges one text; ereports with positions in a->text.
void analyze_text(TextAnalysis* a);
// Whether two analyzed trees (nodeToString) are the same but for positions.
bool same_tree(const char* a, const char* b);

// parser_errposition's rule: a byte offset in the text as a 1-based character position.
int char_pos(const char* text, int location);
// ereports 0A000 on the first thing in an analyzed text's items (a target list) a window
// cannot run (analyze_judge.cpp).
void refuse_unrunnable(const TextAnalysis* a, Node* items);
// Judges each aggregate call of one analyzed aggregate item into it->calls (analyze_judge.cpp).
void judge_calls(const TextAnalysis* a, Node* expr, ItemInfo* it);

}  // namespace stoatflow::pg::analyze_detail
