// core/subprocess.h on programs every Debian system has: cat, env, false.

#include "core/subprocess.h"

#include <cerrno>
#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

namespace coda {
namespace {

TEST(RunProgram, AChildThatWritesBeforeItHasReadEverythingDoesNotDeadlock) {
  // cat echoes as it reads: 4 MiB is far more than a pipe holds (64 KiB), so the input and the
  // output must move together.
  const std::string input(4U << 20U, 'x');
  const ProgramRun run = run_program("cat", input);
  EXPECT_TRUE(run.exited_ok());
  EXPECT_EQ(run.out.size(), input.size());
  EXPECT_EQ(run.out, input);
}

TEST(RunProgram, SetsTheEnvironmentEntriesItIsGivenOnce) {
  ::setenv("CODA_SUBPROCESS_TEST", "parent", 1);
  const ProgramRun run = run_program("env", "", {.environment = {"CODA_SUBPROCESS_TEST=child"}});
  ASSERT_TRUE(run.exited_ok()) << run.err;
  EXPECT_NE(run.out.find("CODA_SUBPROCESS_TEST=child\n"), std::string::npos);
  EXPECT_EQ(run.out.find("CODA_SUBPROCESS_TEST=parent"), std::string::npos);
  EXPECT_NE(run.out.find("PATH="), std::string::npos);  // the rest is this process's
}

TEST(RunProgram, SaysHowAChildEndedOrWhyItDidNotStart) {
  const ProgramRun failed = run_program("false", "");
  EXPECT_EQ(failed.end, ProgramRun::End::Exited);
  EXPECT_EQ(failed.exit_status, 1);
  EXPECT_FALSE(failed.exited_ok());
  const ProgramRun missing = run_program("/nonexistent/program", "");
  EXPECT_EQ(missing.end, ProgramRun::End::NotStarted);
  EXPECT_EQ(missing.start_error, ENOENT);
}

}  // namespace
}  // namespace coda
