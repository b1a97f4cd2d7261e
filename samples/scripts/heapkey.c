/* The input is copied into heap records, looked up by an index computed from the input, and
 * checked through the record's pointer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct rec {
    char name[8];
    int weight;
};

int main(void) {
    char in[5] = {0};
    if (read(0, in, 4) != 4)
        return 2;
    struct rec **recs = malloc(8 * sizeof *recs);
    for (int i = 0; i < 8; i++) {
        recs[i] = calloc(1, sizeof **recs);
        snprintf(recs[i]->name, sizeof recs[i]->name, "r%d", i);
        recs[i]->weight = i * i + 3;
    }
    struct rec *r = recs[(unsigned char)in[0] & 7];
    int w = r->weight + (in[1] - '0') * 10 + (in[2] - '0');
    if (w == 79 && in[3] == '!')
        puts("opened");
    else
        puts("locked");
    return 0;
}
