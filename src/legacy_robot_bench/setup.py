from setuptools import find_packages, setup

package_name = 'legacy_robot_bench'

setup(
    name=package_name,
    version='0.2.0',
    packages=find_packages(exclude=['test']),
    # the Nabaztag benchmark's load generator, compiled when the benchmark runs
    package_data={'legacy_robot_bench.nabaztag_bridge': ['rabbit_load.c']},
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=True,
    maintainer='Legacy robot drivers maintainers',
    maintainer_email='maintainers@legacy-robots.dev',
    description='Benchmarks and the fault suite (soak) of the legacy robot drivers.',
    license='Apache-2.0',
    extras_require={'test': ['pytest']},
    entry_points={
        'console_scripts': [
            'bench = legacy_robot_bench.bench:main',
            'soak = legacy_robot_bench.soak:main',
            'p2os_bench = legacy_robot_bench.p2os_driver.bench:main',
            'ipaq_bench = legacy_robot_bench.ipaq_driver.bench:main',
            'aibo_bench = legacy_robot_bench.aibo_driver.bench:main',
            'nabaztag_bench = legacy_robot_bench.nabaztag_bridge.bench:main',
            'nabaztag_speech_bench = legacy_robot_bench.nabaztag_bridge.speech_bench:main',
            'nabaztag_hearing_bench = legacy_robot_bench.nabaztag_bridge.hearing_bench:main',
            'nabaztag_kinds_bench = legacy_robot_bench.nabaztag_bridge.kinds_bench:main',
            'pleo_bench = legacy_robot_bench.pleo_driver.bench:main',
            'hosts_bench = legacy_robot_bench.hosts.bench:main',
            'first_data_bench = legacy_robot_bench.first_data_bench:main',
        ],
    },
)
