/* SQLite (Debian's libsqlite3.a): the seeds' trigger hash-table subject, written from its public
 * description. An in-memory database with a small page cache and lookaside, journal off; a table
 * and TRIGGERS triggers named a, b, ... (their names fill the schema's trigger hash table); then,
 * for each byte read from stdin (up to a newline), one more trigger whose name is that byte:
 * creating it looks the name up in the trigger hash table, case-insensitively (a name already
 * taken is an error, as is a byte that is no identifier). Prints each creation's result code;
 * exits with the number of creations that failed. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sqlite3.h>

#ifndef TRIGGERS
#define TRIGGERS 1
#endif

static char pages[4 * 4400];

static int run(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = 0;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, 0);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_DONE || rc == SQLITE_ROW)
            rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

int main(void) {
    char names[8];
    ssize_t n = read(0, names, sizeof names);
    if (n < 0)
        n = 0;
    sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, pages, 4400, 4);
    sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 80, 15);
    sqlite3 *db;
    if (sqlite3_open(":memory:", &db) != SQLITE_OK)
        return 99;
    if (run(db, "pragma journal_mode=off;") || run(db, "create table tbl(a, b);"))
        return 98;
    char sql[96];
    for (int i = 0; i < TRIGGERS; i++) {
        snprintf(sql, sizeof sql, "create trigger %c after insert on tbl begin insert into tbl values(1,2); end;", 'a' + i);
        if (run(db, sql))
            return 97;
    }
    int failed = 0;
    for (ssize_t i = 0; i < n; i++) {
        if (names[i] == '\n')
            break;
        strcpy(sql, "create trigger   after insert on tbl begin insert into tbl values(1,2); end;");
        sql[15] = names[i];
        int rc = run(db, sql);
        printf("%d\n", rc);
        failed += rc != SQLITE_OK;
    }
    sqlite3_close(db);
    return failed;
}
