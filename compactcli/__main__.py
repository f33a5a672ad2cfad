from compactcli.cli import main

if __name__ == "__main__":  # not when a worker process (a Dask LocalCluster) imports it again
    main()
