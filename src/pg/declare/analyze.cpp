// Declaration-time analysis: each text parsed as a SELECT list (PL/pgSQL's expression mode,
// so positions are the user's), given the source's row as its only FROM item, analyzed by
// parse_analyze under a pinned search_path, and judged (README "Expressions and PostgreSQL
// aggregates"). The PostgreSQL work runs in plain C style inside pg_call; the C++ side names,
// checks and reports.
#include "stoatflow/core/error.hpp"
#include "stoatflow/core/names.hpp"
#include "stoatflow/core/window_spec.hpp"

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "stoatflow/pg/declare/analyze.hpp"
#include "stoatflow/pg/declare/analyze_internal.hpp"

using namespace stoatflow;
using namespace stoatflow::pg;
using namespace stoatflow::pg::analyze_detail;

namespace {

const char* const kRoleNames[] = {"key", "event_time", "group_by", "filter", "aggregates"};

// Names the sink already has, or that PostgreSQL would truncate (README "Limits").
void check_names(const std::vector<AnalyzedExpr>& group_by,
                 const std::vector<AnalyzedExpr>& aggregates) {
    static const std::set<std::string> reserved = {"window_start", "window_end", "event_time",
                                                   "final"};
    std::set<std::string> seen;
    auto check = [&](const std::string& name, bool aggregate) {
        core::check_name_length("column name", name, "Give it a shorter name with AS.");
        if (reserved.count(name) || (aggregate && name == "key"))
            throw Error(sqlstate::kDuplicateColumn, "column name \"" + name + "\" is reserved",
                        "The sink already has columns key, window_start, window_end, event_time "
                        "and final; choose another name with AS.");
        if (!seen.insert(name).second)
            throw Error(sqlstate::kDuplicateColumn, "column name \"" + name + "\" is used twice",
                        "Give each item a distinct name with AS.");
    };
    for (const auto& g : group_by) check(g.name, false);
    for (const auto& a : aggregates) check(a.name, true);
}

// PostgreSQL names a column of the source's row by the alias of the FROM item the analysis
// gives it ("r", analyze_pg.cpp): the user wrote the column's own name, and never saw "r".
std::string user_names(std::string text) {
    static const std::string qualified = "\"r.";
    for (std::size_t at = text.find(qualified); at != std::string::npos;
         at = text.find(qualified, at + 1))
        text.erase(at + 1, 2);
    if (text.find("table alias \"r\"") != std::string::npos)
        return "Name the columns of the source's row without a table name: amount, not "
               "t.amount.";
    return text;
}

std::vector<AnalyzedExpr> analyze_role(const RowDesc* row, Role role, const std::string& text,
                                       core::WindowKind kind,
                                       const std::optional<std::string>& search_path,
                                       bool* epoch_ms) {
    TextAnalysis a{};
    a.text = text.c_str();
    a.role = role;
    a.row = row;
    a.need_combine = kind == core::WindowKind::Session || kind == core::WindowKind::Sliding;
    a.window_kind = core::to_string(kind);
    a.parse_path = search_path ? search_path->c_str() : nullptr;
    try {
        pg_call([&] {
            // No outer context callback may see the parser's positions (a SQL function's
            // would make them positions in its own body): they are the user's text.
            ErrorContextCallback* const outer = error_context_stack;
            error_context_stack = nullptr;
            analyze_text(&a);
            error_context_stack = outer;
        });
    } catch (const PgError& e) {
        // Positions are the user's text: shown as PostgreSQL shows an error in a function
        // body (the text as the internal query, the cursor in it).
        PgError::Fields f = e.fields();
        f.message = std::string(kRoleNames[role]) + ": " + user_names(f.message);
        f.detail = user_names(f.detail);
        f.hint = user_names(f.hint);
        if (f.cursorpos > 0) {
            f.internalpos = f.cursorpos;
            f.internalquery = text;
            f.cursorpos = 0;
            f.raise_positions = true;
        }
        throw PgError(std::move(f));
    }
    std::vector<AnalyzedExpr> out;
    for (int i = 0; i < a.nitems; ++i) {
        const ItemInfo& it = a.items[i];
        AnalyzedExpr e;
        e.name = it.name ? it.name : "";
        e.type = it.type;
        e.typmod = it.typmod;
        e.type_name = it.type_name;
        e.tree = it.tree;
        e.stored = it.stored;
        for (int c = 0; c < it.ncalls; ++c) {
            const CallInfo& ci = it.calls[c];
            AggregateCall call;
            call.aggfnoid = ci.aggfnoid;
            call.aggregate = ci.aggregate;
            call.transfn = ci.transfn;
            call.finalfn = ci.finalfn;
            call.combinefn = ci.combinefn;
            call.serialfn = ci.serialfn;
            call.deserialfn = ci.deserialfn;
            call.transtype = ci.transtype;
            if (ci.initval) call.initval = ci.initval;
            call.finalfn_extra = ci.finalextra;
            call.finalfn_modify = ci.finalmodify;
            call.transfn_strict = ci.strict;
            call.location = ci.location;
            e.calls.push_back(std::move(call));
        }
        out.push_back(std::move(e));
    }
    if (epoch_ms) *epoch_ms = a.epoch_ms;
    return out;
}

}  // namespace

namespace stoatflow::pg {

Analysis analyze_declaration(const DeclarationTexts& t) {
    const RowDesc* row = nullptr;
    const char* json = t.columns_json.c_str();
    // Everything runs under the pinned path (until the transaction or the caller's
    // (sub)transaction ends or this returns) but parsing along t.search_path when given.
    const int nest = pg_call([&] { return pin_search_path(); });
    row = pg_call([&] { return row_from_json(json); });
    Analysis an;
    auto one = [&](const std::optional<std::string>& text, Role role, bool* epoch_ms = nullptr) {
        std::optional<AnalyzedExpr> e;
        if (text)
            e = std::move(
                analyze_role(row, role, *text, t.window_kind, t.search_path, epoch_ms).front());
        return e;
    };
    an.key = one(t.key, kKey);
    an.event_time = one(t.event_time, kEventTime, &an.event_time_epoch_ms);
    an.filter = one(t.filter, kFilter);
    if (t.group_by)
        an.group_by =
            analyze_role(row, kGroupBy, *t.group_by, t.window_kind, t.search_path, nullptr);
    if (!t.aggregates)
        throw Error(sqlstate::kInvalidParameterValue, "aggregates must not be NULL",
                    "For example: 'count(*) AS views, sum(amount) AS revenue'.");
    an.aggregates =
        analyze_role(row, kAggregates, *t.aggregates, t.window_kind, t.search_path, nullptr);
    check_names(an.group_by, an.aggregates);
    pg_call([&] { unpin_search_path(nest); });
    return an;
}

namespace {
std::string joined(const std::vector<AnalyzedExpr>& items) {
    std::string s;
    for (const auto& e : items) s += (s.empty() ? "" : ", ") + e.stored;
    return s;
}
}  // namespace

DeclarationTexts stored_texts(const DeclarationTexts& t) {
    const Analysis an = analyze_declaration(t);
    DeclarationTexts out;
    out.columns_json = t.columns_json;
    out.window_kind = t.window_kind;
    if (an.key) out.key = an.key->stored;
    if (an.event_time) out.event_time = an.event_time->stored;
    if (an.filter) out.filter = an.filter->stored;
    if (!an.group_by.empty()) out.group_by = joined(an.group_by);
    out.aggregates = joined(an.aggregates);
    // As the worker will read them: the same objects, or the declaration is refused (a text
    // ruleutils could not write back faithfully).
    const Analysis again = analyze_declaration(out);
    auto refuse = [](const char* role, const std::optional<std::string>& text) {
        throw Error(sqlstate::kFeatureNotSupported,
                    std::string(role) + ": written back as \"" + text.value_or("") +
                        "\" it would not resolve to the same objects",
                    "Schema-qualify the functions, operators and types in it.");
    };
    auto same = [](const AnalyzedExpr& a, const AnalyzedExpr& b) {
        return a.name == b.name &&
               pg_call([&] { return same_tree(a.tree.c_str(), b.tree.c_str()); });
    };
    auto check = [&](const char* role, const std::optional<AnalyzedExpr>& a,
                     const std::optional<AnalyzedExpr>& b, const std::optional<std::string>& text) {
        if (a.has_value() != b.has_value() || (a && !same(*a, *b))) refuse(role, text);
    };
    auto check_list = [&](const char* role, const std::vector<AnalyzedExpr>& a,
                          const std::vector<AnalyzedExpr>& b,
                          const std::optional<std::string>& text) {
        if (a.size() != b.size()) refuse(role, text);
        for (std::size_t i = 0; i < a.size(); ++i)
            if (!same(a[i], b[i])) refuse(role, text);
    };
    check("key", an.key, again.key, out.key);
    check("event_time", an.event_time, again.event_time, out.event_time);
    check("filter", an.filter, again.filter, out.filter);
    check_list("group_by", an.group_by, again.group_by, out.group_by);
    check_list("aggregates", an.aggregates, again.aggregates, out.aggregates);
    return out;
}

}  // namespace stoatflow::pg
