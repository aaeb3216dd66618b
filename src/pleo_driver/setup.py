from setuptools import setup

package_name = 'pleo_driver'

setup(
    name=package_name,
    version='0.2.0',
    packages=[package_name, f'{package_name}.pdk'],
    package_data={package_name: ['sample_project/*.*', 'sample_project/*/*']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description='Ugobe Pleo: USB serial monitor driver, emulator, and urf_builder (a rebuild '
    'of the PDK build chain).',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'pleo_driver = pleo_driver.node:main',
            'pleo_emulator = pleo_driver.emulator:main',
            'urf_builder = pleo_driver.urf_builder:main',
            'wav2usf = pleo_driver.pdk_tools:wav2usf_main',
            'csv2umf = pleo_driver.pdk_tools:csv2umf_main',
            'csv2ucf = pleo_driver.pdk_tools:csv2ucf_main',
        ],
        'legacy_robots.robots': ['pleo = pleo_driver.plugin:PLUGIN'],
    },
)
