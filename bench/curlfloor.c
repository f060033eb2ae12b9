/*
 * bench/curlfloor.c - the memory floor under an orgw worker: a process
 * that links Debian's libcurl (as orgw.fcgi must), initialises it the
 * way upstream_global_init() does, makes one easy handle, and waits.
 * bench/run.sh samples its RSS beside the idle workers', so the table
 * shows how much of a worker's RSS is the library's before orgw does
 * anything.  Stopped by the bench with SIGTERM, by PID.
 */
#include <unistd.h>

#include <curl/curl.h>

int
main(void)
{
	CURL *h;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return 1;
	if ((h = curl_easy_init()) == NULL)
		return 1;
	pause();
	curl_easy_cleanup(h);
	curl_global_cleanup();
	return 0;
}
