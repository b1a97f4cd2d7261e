/* pthread_self inside started threads: each thread records the id it sees, and main compares
 * them with the ids pthread_create gave and with its own. One input byte: the inner thread's. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_t seen_outer, seen_inner, inner_id;

static void *inner(void *arg)
{
    seen_inner = pthread_self();
    return (void *)(long)(*(char *)arg == 'k');
}

static void *outer(void *arg)
{
    void *got = 0;
    seen_outer = pthread_self();
    pthread_create(&inner_id, 0, inner, arg);
    pthread_join(inner_id, &got);
    int back = pthread_equal(pthread_self(), seen_outer);
    return (void *)((long)got + 2 * back);
}

int main(void)
{
    char c;
    if (read(0, &c, 1) != 1)
        return 9;
    pthread_t outer_id;
    void *got = 0;
    pthread_create(&outer_id, 0, outer, &c);
    pthread_join(outer_id, &got);
    printf("%d %d %d %d %ld\n", pthread_equal(seen_outer, outer_id) != 0, pthread_equal(seen_inner, inner_id) != 0,
           pthread_equal(pthread_self(), outer_id) != 0, pthread_equal(seen_inner, seen_outer) != 0, (long)got);
    return (long)got == 3;
}
