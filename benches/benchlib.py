"""What the git-comparing benches share: a git environment that ignores the user's config and fixes the
committer and dates (so bport and git produce comparable commits), and a git runner that stops the bench with
git's output on failure."""

import os
import subprocess
import sys

DATE = "1700000000 +0000"


def git_env(**extra):
    """os.environ without repository overrides, with no user config and a fixed committer (plus `extra`)."""
    env = dict(
        os.environ,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_COMMITTER_NAME="Bench Committer",
        GIT_COMMITTER_EMAIL="bench@example.com",
        GIT_COMMITTER_DATE=DATE,
        LC_ALL="C",
        **extra,
    )
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "BPORT_LOG"):
        env.pop(k, None)
    return env


def git_runner(env):
    """A `git(repo, *args, check=True)` running in `env` that returns stdout and exits the bench on failure."""

    def git(repo, *args, check=True):
        r = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
        if check and r.returncode != 0:
            sys.exit(f"git {' '.join(args)} failed:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    return git
