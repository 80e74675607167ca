"""flows — Prefect flows: the stage sequence of the paper's Figure 10, wiring only."""
from simweb.tasks.logs import install_one_line_user_errors

# A user's mistake raised inside a task (a directory file of the wrong shape, a missing file)
# is logged by Prefect's engines in one line, without a traceback per retry: in the command
# line's runs and in a deployment's runs alike.
install_one_line_user_errors()
