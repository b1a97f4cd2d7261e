/* A span over the accept set "ab" written as one loop that walks a pointer through the set and
 * restarts it after every match (the shape of the quantified-merging issue), inside main. */
#include "harness.h"

int main(void) {
    char buf[M + 1];
    size_t n;
    int bad = read_input(buf, &n);
    if (bad) return bad;
    const char *set = "ab";
    const char *p = set;
    size_t count = 0;
    while (*p && count < n) {
        if (*p == buf[count]) {
            count++;
            p = set;
        } else {
            p++;
        }
    }
    return (int)count;
}
