/* libosip (Debian's libosip2.a/libosipparser2.a): osip_message_parse of a SIP message read from
 * stdin, as the seeds' libosip driver. Prints the kind of message (a request's method when
 * INVITE or REGISTER, a response's status class); exits 0 when parsed, 1 when not. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include <osipparser2/osip_parser.h>

static void quiet(const char *file, int line, osip_trace_level_t level, const char *fmt, va_list ap) {
    (void)file;
    (void)line;
    (void)level;
    (void)fmt;
    (void)ap;
}

int main(void) {
    char buf[256];
    ssize_t n = read(0, buf, sizeof buf - 1);
    if (n < 0)
        n = 0;
    buf[n] = 0;
    osip_trace_initialize_func(OSIP_FATAL, quiet);   /* no timestamped log on stdout */
    for (int level = 0; level < END_TRACE_LEVEL; level++)
        osip_trace_disable_level((osip_trace_level_t)level);
    if (parser_init() != 0)
        return 99;
    osip_message_t *sip;
    if (osip_message_init(&sip) != 0)
        return 98;
    int rc = osip_message_parse(sip, buf, (size_t)n);
    if (rc == 0) {
        if (MSG_IS_REQUEST(sip))
            printf("request %s\n", MSG_IS_INVITE(sip) ? "INVITE" : MSG_IS_REGISTER(sip) ? "REGISTER" : "other");
        else
            printf("response %dxx\n", sip->status_code / 100);
    }
    osip_message_free(sip);
    return rc == 0 ? 0 : 1;
}
