from tradingmem_assets.cli import main

main()
