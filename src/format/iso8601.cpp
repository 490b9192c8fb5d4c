// ISO-8601 date-times to epoch milliseconds, in the proleptic Gregorian calendar.
#include "stoatflow/format/iso8601.hpp"

#include <cstdint>

namespace stoatflow::format {
namespace {

using core::Millis;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int days_in_month(std::int64_t y, int m) {
    static constexpr int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : kDays[m - 1];
}

// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (negative before 1970).
std::int64_t days_since_epoch(std::int64_t y, int m, int d) {
    static constexpr int kBeforeMonth[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    auto leap_years_through = [](std::int64_t yr) {
        return core::floor_div(yr, 4) - core::floor_div(yr, 100) + core::floor_div(yr, 400);
    };
    std::int64_t days = 365 * (y - 1970) + leap_years_through(y - 1) - leap_years_through(1969);
    days += kBeforeMonth[m - 1] + ((m > 2 && is_leap(y)) ? 1 : 0) + (d - 1);
    return days;
}

}  // namespace

bool parse_iso8601(std::string_view s, Millis& out) {
    const char* p = s.data();
    const char* const end = p + s.size();
    auto number = [&](int width, int& v) {
        if (end - p < width) return false;
        v = 0;
        for (int k = 0; k < width; ++k) {
            if (!is_digit(p[k])) return false;
            v = v * 10 + (p[k] - '0');
        }
        p += width;
        return true;
    };
    auto literal = [&](char c) {
        if (p == end || *p != c) return false;
        ++p;
        return true;
    };

    int year, month, day, hour, minute, second;
    if (!number(4, year) || !literal('-') || !number(2, month) || !literal('-') || !number(2, day))
        return false;
    if (p == end || (*p != 'T' && *p != 't' && *p != ' ')) return false;
    ++p;
    if (!number(2, hour) || !literal(':') || !number(2, minute) || !literal(':') ||
        !number(2, second))
        return false;

    int millis = 0;
    if (literal('.')) {
        int digits = 0;
        for (; p != end && is_digit(*p); ++p, ++digits) {
            if (digits == 9) return false;  // finer than nanoseconds: not a time we emit
            if (digits < 3) millis = millis * 10 + (*p - '0');
        }
        if (digits == 0) return false;
        for (int k = digits; k < 3; ++k) millis *= 10;
    }

    int offset_minutes = 0;
    if (p != end) {
        if (*p == 'Z' || *p == 'z') {
            ++p;
        } else if (*p == '+' || *p == '-') {
            const int sign = *p == '-' ? -1 : 1;
            ++p;
            int oh = 0, om = 0;
            if (!number(2, oh)) return false;
            if (p != end) {
                literal(':');
                if (!number(2, om)) return false;
            }
            if (oh > 23 || om > 59) return false;
            offset_minutes = sign * (oh * 60 + om);
        } else {
            return false;
        }
    }
    if (p != end) return false;

    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 60)
        return false;
    const std::int64_t seconds = days_since_epoch(year, month, day) * 86400 + hour * 3600 +
                                 minute * 60 + second - offset_minutes * 60;
    out = seconds * 1000 + millis;
    return true;
}

}  // namespace stoatflow::format
