/* SPDX-License-Identifier: MIT */
/*
 * t_main.h - the one main() of the Check programs: run the suite with
 * the verbosity CK_VERBOSITY asks (CK_ENV), exit 0 only when every test
 * passed.  A program with set-up before its suite calls t_run() from a
 * main of its own.  Prefix t_.
 */
#ifndef MQFS_TESTS_T_MAIN_H
#define MQFS_TESTS_T_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int t_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A TCase of @s named @name with @timeout_s seconds per test. */
static inline TCase *t_tcase(Suite *s, const char *name, double timeout_s)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout_s);
	suite_add_tcase(s, tc);
	return tc;
}

#define T_MAIN(suite_fn)		\
	int main(void)			\
	{				\
		return t_run(suite_fn());	\
	}

#endif /* MQFS_TESTS_T_MAIN_H */
