"""Start the bertviz-lab browser app: ``python app.py [--model SOURCE] [--device DEV] [--public] [--mcp] ...``
(the options are in ``bertviz_lab/launcher.py``; ``python app.py --help`` lists them)."""
from bertviz_lab.launcher import main

if __name__ == "__main__":
    main()
